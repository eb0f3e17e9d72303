"""A gated batch resumes at the gated call: what ran stays run, B runs once as decided, then C."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.approvals.helpers import (
    A,
    B,
    C,
    approval_created_at,
    approval_ids,
    decide,
    ended,
    events,
    gated_config,
    ledger,
    results,
    run_turn,
    turn_id,
)
from tests.conftest import running_app


async def test_allowed_call_runs_once_across_interrupt_restart_and_approval(
    settings: Any, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    async with running_app(settings) as (_, client):
        _, frames = await run_turn(client, alice, gated_config())
    turn = turn_id(frames)
    before = await ledger(sql, turn)
    assert [(r.tool_call_id, r.result) for r in before] == [(A, "A")]
    approval_id = approval_ids(frames)[0]
    assert before[0].created_at <= await approval_created_at(sql, approval_id)

    async with running_app(settings) as (_, client):
        resumed = await decide(client, alice, approval_id)
    assert ended(resumed)["status"] == "completed"
    assert ended(resumed)["final_output"] == "all done"
    touched = {e["tool_call_id"] for e in events(resumed, "tool_call.completed") + events(resumed, "policy.decision")}
    assert A not in touched
    after = await ledger(sql, turn)
    assert sorted(r.tool_call_id for r in after) == [A, B, C]
    row_a = next(r for r in after if r.tool_call_id == A)
    assert (row_a.id, row_a.created_at) == (before[0].id, before[0].created_at)
    assert {r.tool_call_id: r.result for r in after} == {A: "A", B: "42", C: "C"}


async def test_approval_with_edited_arguments_runs_the_edited_call(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    resumed = await decide(client, alice, approval_id, arguments={"expression": "1+1"})
    assert results(resumed) == ["2", "C"]
    row_b = next(r for r in await ledger(sql, turn_id(frames)) if r.tool_call_id == B)
    assert row_b.arguments == {"expression": "1+1"}
    approval = (await client.get(f"/approvals/{approval_id}", headers=alice)).json()
    assert approval["arguments"] == {"expression": "6*7"}
    assert approval["edited_arguments"] == {"expression": "1+1"}


async def test_approval_with_empty_edited_arguments_runs_with_no_arguments(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    resumed = await decide(client, alice, approval_ids(frames)[0], arguments={})
    completed_b = next(e for e in events(resumed, "tool_call.completed") if e["tool_call_id"] == B)
    assert completed_b["is_error"] is True
    assert "expression" in completed_b["result"]
    row_b = next(r for r in await ledger(sql, turn_id(frames)) if r.tool_call_id == B)
    assert row_b.arguments == {}


@pytest.mark.parametrize("arguments", [["1+1"], "1+1", 7, True])
async def test_edited_arguments_that_are_not_an_object_are_rejected(
    client: httpx.AsyncClient, alice: dict[str, str], arguments: Any
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    response = await client.post(
        f"/approvals/{approval_id}", json={"decision": "approve", "arguments": arguments}, headers=alice
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert any("arguments" in error["loc"] for error in response.json()["errors"])
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "pending"


async def test_denial_reaches_the_model_and_the_turn_completes(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    session, frames = await run_turn(client, alice, gated_config())
    resumed = await decide(client, alice, approval_ids(frames)[0], "deny", reason="too risky")
    assert results(resumed) == ["denied by a human: too risky", "C"]
    assert ended(resumed)["status"] == "completed"
    assert ended(resumed)["final_output"] == "all done"
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    denied = next(m for m in messages if m["role"] == "tool" and m["tool_call_id"] == B)
    assert denied["content"] == "denied by a human: too risky"
    assert denied["is_error"] is True
    assert messages[-1]["role"] == "assistant"
    assert messages[-1]["content"] == "all done"
    row_b = next(r for r in await ledger(sql, turn_id(frames)) if r.tool_call_id == B)
    assert row_b.is_error is True


async def test_denial_without_a_reason_says_so(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    resumed = await decide(client, alice, approval_ids(frames)[0], "deny")
    assert results(resumed)[0] == "denied by a human: no reason given"
