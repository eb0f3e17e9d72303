from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, read_turn

BATCH = {
    "tool_calls": [
        {"name": "echo", "arguments": {"text": "A"}},
        {"name": "calculator", "arguments": {"expression": "6*7"}},
        {"name": "echo", "arguments": {"text": "C"}},
    ]
}
GATE_CALCULATOR = {
    "id": "calc-needs-human",
    "point": "tool",
    "tool": "calculator",
    "verdict": "requires_approval",
    "reason": "arithmetic needs a human",
}


def gated_config(**extra: Any) -> dict[str, Any]:
    return scripted_config(BATCH, {"text": "all done"}, policies=[GATE_CALCULATOR], **extra)


async def start_gated_turn(client: httpx.AsyncClient, headers: dict[str, str]) -> tuple[dict, list[Frame]]:
    agent = await create_agent(client, headers, gated_config())
    session = await create_session(client, headers, agent["id"])
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=headers)
    return session, frames


def completed_results(frames: list[Frame]) -> list[str]:
    return [f.data["result"] for f in frames if f.event == "tool_call.completed"]


async def test_batch_interrupts_at_gated_call_after_running_the_allowed_one(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    _, frames = await start_gated_turn(client, alice)
    assert completed_results(frames) == ["A"]
    required = [f for f in frames if f.event == "approval.required"]
    assert [r.data["name"] for r in required] == ["calculator"]
    assert required[0].data["arguments"] == {"expression": "6*7"}
    assert frames[-1].event == "turn.ended"
    assert frames[-1].data["status"] == "interrupted"
    approval = (await client.get(f"/approvals/{required[0].data['approval_id']}", headers=alice)).json()
    assert approval["status"] == "pending"
    assert approval["name"] == "calculator"
    assert len(approval["arguments_hash"]) == 64


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_decision_after_restart_resumes_at_the_gated_call(
    settings: Any, decision: str, alice: dict[str, str]
) -> None:
    async with running_app(settings) as (_, client):
        session, frames = await start_gated_turn(client, alice)
    approval_id = next(f.data["approval_id"] for f in frames if f.event == "approval.required")
    turn_id = frames[0].data["turn_id"]
    async with running_app(settings) as (_, client):
        resumed = await read_turn(
            client,
            "POST",
            f"/approvals/{approval_id}",
            json={"decision": decision, "reason": "not today"},
            headers=alice,
        )
        assert resumed[0].event == "turn.started"
        assert resumed[0].data["resumed_by"] == approval_id
        assert resumed[0].id == frames[-1].id + 1
        results = completed_results(resumed)
        if decision == "approve":
            assert results == ["42", "C"]
        else:
            assert results == ["denied by a human: not today", "C"]
        assert resumed[-1].data["status"] == "completed"
        assert resumed[-1].data["final_output"] == "all done"
        messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
        tool_results = [m["content"] for m in messages if m["role"] == "tool"]
        assert tool_results[0] == "A"
        assert tool_results[2] == "C"
        assert len(tool_results) == 3
        turn = (await client.get(f"/turns/{turn_id}", headers=alice)).json()
        assert turn["status"] == "completed"
