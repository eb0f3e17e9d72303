"""Parallel gated calls: one interrupt asks for all of them; the last decision resumes the turn."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.approvals.helpers import (
    approval_ids,
    ended,
    events,
    gated_config,
    ledger,
    results,
    run_turn,
    turn_id,
)
from tests.sse import Frame, read_turn

TWO_CALCULATIONS = {
    "tool_calls": [
        {"name": "calculator", "arguments": {"expression": "1+1"}},
        {"name": "calculator", "arguments": {"expression": "2+3"}},
    ]
}


async def two_gated(client: httpx.AsyncClient, headers: dict[str, str]) -> list[Frame]:
    _, frames = await run_turn(client, headers, gated_config(TWO_CALCULATIONS, {"text": "both done"}))
    return frames


async def status_of(client: httpx.AsyncClient, headers: dict[str, str], approval_id: str) -> str:
    return str((await client.get(f"/approvals/{approval_id}", headers=headers)).json()["status"])


async def decide_many(
    client: httpx.AsyncClient, headers: dict[str, str], turn: str, *decisions: dict[str, Any]
) -> httpx.Response:
    return await client.post(f"/turns/{turn}/approvals", json={"decisions": list(decisions)}, headers=headers)


async def test_gated_calls_of_one_batch_are_all_asked_in_one_interrupt(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await two_gated(client, alice)
    required = events(frames, "approval.required")
    assert [r["arguments"] for r in required] == [{"expression": "1+1"}, {"expression": "2+3"}]
    assert results(frames) == []
    assert ended(frames)["status"] == "interrupted"


async def test_first_decision_answers_202_and_the_last_resumes(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    frames = await two_gated(client, alice)
    first, second = approval_ids(frames)
    response = await client.post(f"/approvals/{first}", json={"decision": "approve"}, headers=alice)
    assert response.status_code == 202, response.text
    waiting = response.json()
    assert waiting["turn_id"] == turn_id(frames)
    assert [a["id"] for a in waiting["pending"]] == [second]
    assert (await client.get(f"/turns/{turn_id(frames)}", headers=alice)).json()["status"] == "interrupted"
    assert await ledger(sql, turn_id(frames)) == []

    resumed = await read_turn(client, "POST", f"/approvals/{second}", json={"decision": "approve"}, headers=alice)
    assert resumed[0].data["resumed_by"] == second
    assert results(resumed) == ["2", "5"]
    assert ended(resumed)["status"] == "completed"
    assert ended(resumed)["final_output"] == "both done"


async def test_one_request_decides_the_whole_batch(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    frames = await two_gated(client, alice)
    first, second = approval_ids(frames)
    body = {
        "decisions": [
            {"approval_id": first, "decision": "approve"},
            {"approval_id": second, "decision": "deny", "reason": "enough maths"},
        ]
    }
    resumed = await read_turn(client, "POST", f"/turns/{turn_id(frames)}/approvals", json=body, headers=alice)
    assert results(resumed) == ["2", "denied by a human: enough maths"]
    assert ended(resumed)["status"] == "completed"
    assert {await status_of(client, alice, first), await status_of(client, alice, second)} == {"approved", "denied"}


async def test_batch_with_an_already_decided_approval_records_nothing(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await two_gated(client, alice)
    first, second = approval_ids(frames)
    assert (await client.post(f"/approvals/{first}", json={"decision": "approve"}, headers=alice)).status_code == 202
    response = await decide_many(
        client,
        alice,
        turn_id(frames),
        {"approval_id": second, "decision": "approve"},
        {"approval_id": first, "decision": "deny"},
    )
    assert response.status_code == 409, response.text
    assert await status_of(client, alice, second) == "pending"
    assert await status_of(client, alice, first) == "approved"


async def test_batch_with_an_unknown_approval_records_nothing(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    frames = await two_gated(client, alice)
    first, _ = approval_ids(frames)
    response = await decide_many(
        client,
        alice,
        turn_id(frames),
        {"approval_id": first, "decision": "approve"},
        {"approval_id": str(uuid.uuid4()), "decision": "approve"},
    )
    assert response.status_code == 404, response.text
    assert await status_of(client, alice, first) == "pending"


async def test_batch_naming_one_approval_twice_conflicts(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    frames = await two_gated(client, alice)
    first, _ = approval_ids(frames)
    decision = {"approval_id": first, "decision": "approve"}
    response = await decide_many(client, alice, turn_id(frames), decision, decision)
    assert response.status_code == 409, response.text
    assert await status_of(client, alice, first) == "pending"
