"""Autonomous turns over HTTP with the scripted provider: PLAN, PURSUE each todo with governed tools, the summary."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, read_turn

AUTONOMY = {"enabled": True, "max_steps": 5}


def _plan(*titles: str) -> dict[str, Any]:
    return {"text": json.dumps({"todos": [{"title": t} for t in titles]})}


def _echo(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "echo", "arguments": {"text": text}}]}


async def _autonomous(
    client: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **body: Any
) -> list[Frame]:
    agent = await create_agent(client, headers, scripted_config(*steps, autonomy=AUTONOMY))
    session = await create_session(client, headers, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    return await read_turn(client, "POST", url, json={"input": "do it", "mode": "autonomous", **body}, headers=headers)


def _of(frames: list[Frame], event: str) -> list[dict[str, Any]]:
    return [f.data for f in frames if f.event == event]


THREE_STEPS = (
    _plan("first", "second", "third"),
    _echo("one"), {"text": "step one done"},
    _echo("two"), {"text": "step two done"},
    _echo("three"), {"text": "step three done"},
    {"text": "all three steps are done"},
)  # fmt: skip


async def test_a_three_todo_plan_runs_a_governed_tool_per_step_then_a_summary(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await _autonomous(client, alice, *THREE_STEPS)
    created = _of(frames, "plan.created")
    assert len(created) == 1
    assert created[0]["todos"] == [
        {"id": "todo_1", "title": "first"}, {"id": "todo_2", "title": "second"}, {"id": "todo_3", "title": "third"},
    ]  # fmt: skip
    assert [e["todo_id"] for e in _of(frames, "plan.step.started")] == ["todo_1", "todo_2", "todo_3"]
    completed = _of(frames, "plan.step.completed")
    assert [(e["todo_id"], e["status"], e["output"]) for e in completed] == [
        ("todo_1", "done", "step one done"), ("todo_2", "done", "step two done"), ("todo_3", "done", "step three done"),
    ]  # fmt: skip
    assert [e["result"] for e in _of(frames, "tool_call.completed")] == ["one", "two", "three"]
    assert len([e for e in _of(frames, "policy.decision") if e["point"] == "tool"]) == 3
    ended = frames[-1].data
    assert (ended["status"], ended["final_output"]) == ("completed", "all three steps are done")
    assert ended["loop_count"] == 6


async def test_a_plan_longer_than_max_steps_ends_loop_limit_with_the_partial_result(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await _autonomous(client, alice, *THREE_STEPS, limits={"max_steps": 2})
    assert [e["todo_id"] for e in _of(frames, "plan.step.completed")] == ["todo_1", "todo_2"]
    ended = frames[-1].data
    assert ended["status"] == "loop_limit"
    assert "step one done" in ended["final_output"]
    assert "step two done" in ended["final_output"]


async def test_an_invalid_plan_is_retried_once_with_the_error_then_fails_plan_invalid(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await _autonomous(client, alice, {"text": "not json"}, {"text": '{"todos": []}'})
    assert _of(frames, "plan.created") == []
    assert [e["text"] for e in _of(frames, "message.completed")] == ["not json", '{"todos": []}']
    ended = frames[-1].data
    assert ended["status"] == "failed"
    assert ended["error"]["code"] == "plan_invalid"


async def test_an_invalid_plan_corrected_on_retry_runs(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    frames = await _autonomous(
        client, alice, {"text": '{"todo": 1}'}, _plan("only"), {"text": "did it"}, {"text": "summary"}
    )
    assert [e["status"] for e in _of(frames, "plan.step.completed")] == ["done"]
    assert frames[-1].data["final_output"] == "summary"


async def test_autonomous_mode_needs_the_agent_to_allow_it(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice, scripted_config())
    session = await create_session(client, alice, agent["id"])
    response = await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "x", "mode": "autonomous"}, headers=alice
    )
    assert response.status_code == 422
    assert response.json()["code"] == "autonomy_disabled"
    turns = await client.get(f"/sessions/{session['id']}/turns", headers=alice)
    assert turns.json()["items"] == []


async def test_a_loop_limit_mid_plan_ends_the_turn_with_what_was_done(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await _autonomous(client, alice, *THREE_STEPS, limits={"max_loops": 3})
    ended = frames[-1].data
    assert ended["status"] == "loop_limit"
    assert [e["status"] for e in _of(frames, "plan.step.completed")] == ["done", "failed"]
    assert "step one done" in ended["final_output"]
