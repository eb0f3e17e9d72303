"""A policy set that cannot be read or evaluated denies: tool calls and whole turns alike."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Session
from tests.approvals.helpers import (
    A,
    B,
    C,
    approval_ids,
    decide,
    ended,
    events,
    gated_config,
    ledger,
    open_session,
    put_raw_tenant_policies,
    receipts,
    run_turn,
    start_turn,
    turn_id,
    usage_rows,
)
from tests.factories import scripted_config

INVALID_SETS: list[Any] = [
    [{"id": "broken", "point": "tool", "verdict": "deny"}],
    [{"id": "broken", "point": "pre_llm", "verdict": "deny", "input_regex": "("}],
    {"not": "a list"},
]


@pytest.mark.parametrize("invalid", INVALID_SETS, ids=["missing-tool", "bad-regex", "not-a-list"])
async def test_unreadable_tenant_policies_deny_tool_calls(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str], invalid: Any
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    await put_raw_tenant_policies(sql, tenant, invalid)
    resumed = await decide(client, alice, approval_ids(frames)[0])
    completed = {e["tool_call_id"]: e for e in events(resumed, "tool_call.completed")}
    assert set(completed) == {B, C}
    for call in (B, C):
        assert completed[call]["is_error"] is True
        assert completed[call]["result"].startswith("denied by policy: policy engine error")
    judged = [e for e in events(resumed, "policy.decision") if e["point"] != "tool_result"]
    decided = {e["tool_call_id"]: (e["verdict"], e["rule_id"]) for e in judged}
    assert decided == {B: ("deny", "engine_error"), C: ("deny", "engine_error"), None: ("deny", "engine_error")}
    # A ran before the rules broke; what the model sees of its stored result cannot be screened either
    withheld = [(e["tool_call_id"], e["rule_id"]) for e in events(resumed, "policy.decision") if e not in judged]
    assert withheld == [(A, "engine_error")]
    # the next reply cannot be screened by the `output` rules either: it is blocked before the call
    assert (ended(resumed)["status"], ended(resumed)["error"]["code"]) == ("failed", "guardrail_blocked")
    assert [e["point"] for e in events(resumed, "policy.decision") if e["tool_call_id"] is None] == ["output"]
    assert {r.tool_call_id: r.result for r in await ledger(sql, turn_id(frames))}[A] == "A"


async def test_engine_error_does_not_rejudge_a_call_that_already_ran(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    await put_raw_tenant_policies(sql, tenant, INVALID_SETS[0])
    await decide(client, alice, approval_ids(frames)[0])
    stored = await receipts(sql, turn_id(frames))
    verdicts_for_a = [(r.point, r.verdict, r.rule_id) for r in stored if r.tool_call_id == A]
    assert verdicts_for_a == [("tool", "allow", None), ("tool_result", "deny", "engine_error")]


async def test_unreadable_tenant_policies_fail_the_turn_before_the_model(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str]
) -> None:
    await put_raw_tenant_policies(sql, tenant, INVALID_SETS[0])
    session, frames = await run_turn(client, alice, scripted_config({"text": "never said"}))
    assert ended(frames)["status"] == "failed"
    assert ended(frames)["error"]["code"] == "policy_denied"
    decision = events(frames, "policy.decision")
    assert [(d["point"], d["verdict"], d["rule_id"]) for d in decision] == [("pre_llm", "deny", "engine_error")]
    assert events(frames, "message.delta") == []
    assert events(frames, "usage") == []
    assert await usage_rows(sql, turn_id(frames)) == 0
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert [m["role"] for m in messages] == ["user"]


LEGACY_PATTERN = {"id": "old", "point": "pre_llm", "verdict": "allow", "input_regex": "(?=x)"}
"""A rule written before patterns ran on RE2 (a lookahead), which RE2 refuses."""


async def test_an_agent_rule_stored_before_re2_denies_the_turn_instead_of_crashing(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    session = await open_session(client, alice, scripted_config({"text": "never said"}))
    async with sql.begin() as conn:
        await conn.execute(
            update(Session)
            .where(Session.id == uuid.UUID(session["id"]))
            .values(snapshot={**session["snapshot"], "policies": [LEGACY_PATTERN]})
        )
    frames = await start_turn(client, alice, session)
    assert ended(frames)["status"] == "failed"
    assert ended(frames)["error"]["code"] == "policy_denied"
    decision = events(frames, "policy.decision")
    assert [(d["point"], d["verdict"], d["rule_id"]) for d in decision] == [("pre_llm", "deny", "engine_error")]


async def test_a_tenant_rule_stored_before_re2_denies_the_turn(
    client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str]
) -> None:
    await put_raw_tenant_policies(sql, tenant, [LEGACY_PATTERN])
    _, frames = await run_turn(client, alice, scripted_config({"text": "never said"}))
    assert ended(frames)["error"]["code"] == "policy_denied"
    assert [d["rule_id"] for d in events(frames, "policy.decision")] == ["engine_error"]
