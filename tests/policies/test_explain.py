"""GET /decisions/{id}/explain: the set in force rebuilt for a receipt, each rule judged in the gate's order."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import PolicyDecision
from tests.approvals.helpers import run_turn, turn_id
from tests.conftest import TokenFactory
from tests.factories import scripted_config

TENANT_RULES = [
    {"id": "no-secrets", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"},
    {"id": "calc-human", "point": "tool", "tool": "calc*", "verdict": "requires_approval"},
]
AGENT_RULES = [
    {"id": "agent-echo", "point": "tool", "tool": "ech*", "verdict": "deny"},
    {"id": "cards", "point": "output", "detect": "credit_card", "verdict": "redact"},
]
ECHO = {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}
CARD_REPLY = {"text": "card 4111 1111 1111 1111 noted"}


async def recorded(client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]) -> dict[str, Any]:
    assert (await client.put("/policies", json={"policies": TENANT_RULES}, headers=root)).status_code == 200
    _, frames = await run_turn(client, alice, scripted_config(ECHO, CARD_REPLY, policies=AGENT_RULES))
    items = (await client.get(f"/turns/{turn_id(frames)}/decisions", headers=alice)).json()["items"]
    return {d["point"]: d for d in items}


async def explained(client: httpx.AsyncClient, headers: dict[str, str], decision_id: str) -> dict[str, Any]:
    response = await client.get(f"/decisions/{decision_id}/explain", headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_tool_decision_lists_the_rules_in_order_with_why(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    root = auth_headers(tenant, "root", roles=["admin"])
    decisions = await recorded(any_backend, alice, root)
    body = await explained(any_backend, alice, decisions["tool"]["id"])
    assert (body["verdict"], body["decided_by"], body["recorded_verdict"]) == ("deny", "agent-echo", "deny")
    assert body["reconstructed"] is True
    assert body["policy_hash"] == decisions["tool"]["policy_hash"] == body["reconstructed_policy_hash"]
    assert (body["agent_version"], body["tenant_policy_version"]) == (1, 1)
    assert [(r["rule_id"], r["source"], r["evaluated"], r["matched"], r["why"]) for r in body["rules"]] == [
        ("no-secrets", "tenant", False, False, "point differs"),
        ("calc-human", "tenant", True, False, "tool glob 'calc*' did not match"),
        ("agent-echo", "agent", True, True, "tool glob matched 'ech*'"),
        ("cards", "agent", False, False, "point differs"),
    ]


async def test_a_blacklisted_call_is_explained_by_the_blacklist_before_any_rule(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    config = scripted_config(ECHO, {"text": "done"}, tool_blacklist=["calc*", "ech*"])
    _, frames = await run_turn(any_backend, alice, config)
    items = (await any_backend.get(f"/turns/{turn_id(frames)}/decisions", headers=alice)).json()["items"]
    [blocked] = [d for d in items if d["point"] == "tool"]
    body = await explained(any_backend, alice, blocked["id"])
    assert (body["verdict"], body["decided_by"], body["reconstructed"]) == ("deny", "tool_blacklist", True)
    traces = [(r["rule_id"], r["source"], r["evaluated"], r["matched"]) for r in body["rules"]]
    assert traces == [("tool_blacklist", "blacklist", True, False), ("tool_blacklist", "blacklist", True, True)]
    assert "ech*" in body["rules"][1]["why"]


async def test_an_output_decision_is_judged_on_the_reply_as_stored_and_says_so(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    decisions = await recorded(any_backend, alice, auth_headers(tenant, "root", roles=["admin"]))
    body = await explained(any_backend, alice, decisions["output"]["id"])
    [cards] = [r for r in body["rules"] if r["rule_id"] == "cards"]
    assert (cards["evaluated"], cards["matched"]) == (True, False)
    assert cards["why"] == "detector credit_card did not match"
    assert (body["recorded_verdict"], body["reconstructed"]) == ("redact", True)
    assert "released" in body["note"]
    assert "4111" not in str(body)


async def test_a_tool_result_decision_says_which_detector_matched_how_often(
    client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    keys = {"id": "keys", "point": "tool_result", "detect": "api_key", "verdict": "redact"}
    assert (
        await client.put("/policies", json={"policies": [keys]}, headers=auth_headers(tenant, "root", roles=["admin"]))
    ).status_code == 200
    secret = {"tool_calls": [{"name": "echo", "arguments": {"text": "key sk-live-Zk3q9XvB2mT7pLw4RcY8nH1s"}}]}
    _, frames = await run_turn(client, alice, scripted_config(secret, {"text": "ok"}))
    items = (await client.get(f"/turns/{turn_id(frames)}/decisions", headers=alice)).json()["items"]
    [screened] = [d for d in items if d["point"] == "tool_result"]
    body = await explained(client, alice, screened["id"])
    assert [(r["rule_id"], r["source"], r["matched"], r["why"]) for r in body["rules"]] == [
        ("keys", "tenant", True, "detector api_key matched 1 time")
    ]
    assert (body["verdict"], body["decided_by"], body["reconstructed"], body["note"]) == ("redact", "keys", True, None)
    assert "sk-live" not in str(body)


async def test_a_receipt_whose_hash_the_rebuilt_set_does_not_give_is_not_reconstructed(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    decisions = await recorded(client, alice, auth_headers(tenant, "root", roles=["admin"]))
    async with sql.begin() as conn:
        stmt = update(PolicyDecision).where(PolicyDecision.id == uuid.UUID(decisions["tool"]["id"]))
        await conn.execute(stmt.values(policy_hash="0" * 64))
    body = await explained(client, alice, decisions["tool"]["id"])
    assert (body["reconstructed"], body["policy_hash"]) == (False, "0" * 64)
    assert body["note"]


async def test_another_tenants_decision_is_404(
    client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    decisions = await recorded(client, alice, auth_headers(tenant, "root", roles=["admin"]))
    stranger = auth_headers(f"tenant-{uuid.uuid4().hex[:8]}", "root", roles=["admin"])
    for headers in (stranger, auth_headers(tenant, "mallory")):
        response = await client.get(f"/decisions/{decisions['tool']['id']}/explain", headers=headers)
        assert response.status_code == 404, response.text
    assert (await client.get(f"/decisions/{uuid.uuid4()}/explain", headers=alice)).status_code == 404
