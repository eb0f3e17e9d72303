"""POST /policies/simulate: a draft judged over recorded decisions, counted by (recorded -> draft) verdict,
without writing anything, calling a model, or reading another tenant's rows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.auth.principal import Principal
from app.models import PolicyDecision, TenantPolicy, Turn, TurnEvent
from app.policies.schemas import SimulationRequest
from app.policies.simulation import PolicySimulation
from tests.approvals.helpers import run_turn, turn_id
from tests.conftest import TokenFactory
from tests.factories import scripted_config

DENY_ECHO = {"id": "no-echo", "point": "tool", "tool": "echo", "verdict": "deny"}
NO_SECRETS = {"id": "no-secrets", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"}
REDACT_CARDS = {"id": "cards", "point": "output", "detect": "credit_card", "verdict": "redact"}
REDACT_KEYS = {"id": "keys", "point": "tool_result", "tool": "echo", "detect": "api_key", "verdict": "redact"}
SECRET = "sk-live-Zk3q9XvB2mT7pLw4RcY8nH1s"
ECHO = {"tool_calls": [{"name": "echo", "arguments": {"text": f"the key is {SECRET}"}}]}
CARD_REPLY = {"text": "your card 4111 1111 1111 1111 is on file"}


@pytest.fixture
def root(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


async def simulate(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await client.post("/policies/simulate", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def counts(result: dict[str, Any], point: str) -> list[tuple[str, str, int]]:
    return [(c["recorded"], c["draft"], c["count"]) for c in result["counts"] if c["point"] == point]


async def rows(sql: AsyncEngine, tenant: str) -> tuple[int, ...]:
    async with AsyncSession(sql) as db:
        found = []
        for model in (Turn, PolicyDecision, TurnEvent, TenantPolicy):
            stmt = select(func.count()).select_from(model).where(model.tenant_id == tenant)
            found.append((await db.execute(stmt)).scalar_one())
        return tuple(found)


async def test_a_draft_that_denies_an_allowed_tool_shows_allow_to_deny_and_writes_nothing(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str], root: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, scripted_config(ECHO, {"text": "done"}))
    before = await rows(sql, tenant)
    result = await simulate(client, root, policies=[DENY_ECHO])
    assert await rows(sql, tenant) == before
    assert counts(result, "tool") == [("allow", "deny", 1)]
    [changed] = [c for c in result["changed"] if c["point"] == "tool"]
    assert (changed["turn_id"], changed["tool"], changed["tool_call_id"]) == (turn_id(frames), "echo", "call_0_0")
    assert (changed["rule_ids_before"], changed["rule_ids_after"]) == ([], ["no-echo"])
    assert result["truncated"] is False
    assert result["changed_total"] == len(result["changed"])


async def test_each_point_replays_its_recorded_input(any_backend: httpx.AsyncClient, alice: dict[str, str],
                                                     root: dict[str, str]) -> None:  # fmt: skip
    await run_turn(any_backend, alice, scripted_config(ECHO, CARD_REPLY), text="my password is hunter2")
    result = await simulate(any_backend, root, policies=[NO_SECRETS, REDACT_CARDS, REDACT_KEYS])
    assert counts(result, "pre_llm") == [("allow", "deny", 1)]
    assert counts(result, "output") == [("allow", "redact", 1)]
    assert counts(result, "tool_result") == [("allow", "redact", 1)]
    after = {c["point"]: c["rule_ids_after"] for c in result["changed"]}
    assert after == {"pre_llm": ["no-secrets"], "output": ["cards"], "tool_result": ["keys"]}
    unchanged = await simulate(any_backend, root, policies=[])
    assert unchanged["changed"] == []
    assert unchanged["evaluated"] == result["evaluated"] == 4


async def test_since_and_agent_id_narrow_the_replay(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    first, _ = await run_turn(client, alice, scripted_config(ECHO, {"text": "one"}))
    await run_turn(client, alice, scripted_config({"text": "two"}))
    both = await simulate(client, root, policies=[DENY_ECHO])
    mine = await simulate(client, root, policies=[DENY_ECHO], agent_id=first["agent_id"])
    assert (both["evaluated"], mine["evaluated"]) == (6, 4)
    later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    assert (await simulate(client, root, policies=[DENY_ECHO], since=later))["evaluated"] == 0
    assert (await simulate(client, root, policies=[DENY_ECHO], limit=1))["evaluated"] == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"policies": [], "limit": 10_001}, "limit"),
        ({"policies": [], "since": "yesterday"}, "since"),
        ({"policies": [], "since": 0}, "since"),
        ({"policies": [], "limit": "5"}, "limit"),
        ({"policies": [{"id": "r", "point": "tool", "verdict": "deny"}]}, "tool"),
        ({"policies": [{**NO_SECRETS, "input_regex": "("}]}, "input_regex"),
    ],
)
async def test_a_bad_request_is_422_naming_the_field(
    client: httpx.AsyncClient, root: dict[str, str], body: dict[str, Any], field: str
) -> None:
    response = await client.post("/policies/simulate", json=body, headers=root)
    assert response.status_code == 422, response.text
    assert any(field in error["loc"] for error in response.json()["errors"]), response.text


async def test_simulation_needs_the_admin_role(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.post("/policies/simulate", json={"policies": []}, headers=alice)
    assert response.status_code == 403, response.text


async def test_another_tenants_decisions_are_never_counted(
    client: httpx.AsyncClient, auth_headers: TokenFactory, root: dict[str, str]
) -> None:
    other = auth_headers(f"tenant-{uuid.uuid4().hex[:8]}", "bob")
    await run_turn(client, other, scripted_config(ECHO, {"text": "done"}))
    result = await simulate(client, root, policies=[DENY_ECHO])
    assert (result["evaluated"], result["counts"], result["changed"]) == (0, [], [])


async def test_the_time_cap_answers_what_was_judged_with_truncated(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str]
) -> None:
    await run_turn(client, alice, scripted_config(ECHO, {"text": "done"}))
    async with AsyncSession(sql) as db:
        simulation = PolicySimulation(db, Principal("root", tenant, frozenset({"admin"})), time_cap=0.0)
        result = await simulation.run(SimulationRequest.model_validate({"policies": [DENY_ECHO]}))
    assert (result.truncated, result.evaluated, result.counts) == (True, 0, [])


async def test_what_cannot_be_replayed_is_counted_as_skipped_not_guessed(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    unknown = {"tool_calls": [{"name": "nope", "arguments": {}}]}
    await run_turn(client, alice, scripted_config(unknown, CARD_REPLY, policies=[REDACT_CARDS]))
    result = await simulate(client, root, policies=[])
    skipped = {s["reason"]: s["count"] for s in result["skipped"]}
    assert skipped == {"unknown_tool": 1, "reply_stored_guarded": 1}
    assert "tool" not in {c["point"] for c in result["counts"]}
