"""Autonomous turns over HTTP with the scripted provider, on PostgreSQL and SQLite: PLAN, PURSUE each todo with
governed tools, the summary; the step and loop limits; an invalid plan."""

from __future__ import annotations

import httpx

from tests.autonomy.support import AUTONOMY, autonomous_turn, echo, of, plan
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn

THREE_STEPS = (
    plan("first", "second", "third"),
    echo("one"), {"text": "step one done"},
    echo("two"), {"text": "step two done"},
    echo("three"), {"text": "step three done"},
    {"text": "all three steps are done"},
)  # fmt: skip


async def test_a_three_todo_plan_runs_a_governed_tool_per_step_then_a_summary(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await autonomous_turn(any_backend, alice, *THREE_STEPS)
    created = of(frames, "plan.created")
    assert len(created) == 1
    assert created[0]["todos"] == [
        {"id": "todo_1", "title": "first"}, {"id": "todo_2", "title": "second"}, {"id": "todo_3", "title": "third"},
    ]  # fmt: skip
    assert [e["todo_id"] for e in of(frames, "plan.step.started")] == ["todo_1", "todo_2", "todo_3"]
    completed = of(frames, "plan.step.completed")
    assert [(e["todo_id"], e["status"], e["output"]) for e in completed] == [
        ("todo_1", "done", "step one done"), ("todo_2", "done", "step two done"), ("todo_3", "done", "step three done"),
    ]  # fmt: skip
    assert [e["result"] for e in of(frames, "tool_call.completed")] == ["one", "two", "three"]
    assert len([e for e in of(frames, "policy.decision") if e["point"] == "tool"]) == 3
    ended = frames[-1].data
    assert (ended["status"], ended["final_output"]) == ("completed", "all three steps are done")
    assert ended["loop_count"] == 6


async def test_a_plan_longer_than_max_steps_ends_loop_limit_with_the_partial_result(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await autonomous_turn(any_backend, alice, *THREE_STEPS, limits={"max_steps": 2})
    assert [e["todo_id"] for e in of(frames, "plan.step.completed")] == ["todo_1", "todo_2"]
    ended = frames[-1].data
    assert ended["status"] == "loop_limit"
    assert "step one done" in ended["final_output"]
    assert "step two done" in ended["final_output"]


async def test_an_invalid_plan_is_retried_once_with_the_error_then_fails_plan_invalid(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await autonomous_turn(any_backend, alice, {"text": "not json"}, {"text": '{"todos": []}'})
    assert of(frames, "plan.created") == []
    assert [e["text"] for e in of(frames, "message.completed")] == ["not json", '{"todos": []}']
    ended = frames[-1].data
    assert ended["status"] == "failed"
    assert ended["error"]["code"] == "plan_invalid"


async def test_an_invalid_plan_corrected_on_retry_runs(any_backend: httpx.AsyncClient, alice: dict[str, str]) -> None:
    frames = await autonomous_turn(
        any_backend, alice, {"text": '{"todo": 1}'}, plan("only"), {"text": "did it"}, {"text": "summary"}
    )
    assert [e["status"] for e in of(frames, "plan.step.completed")] == ["done"]
    assert frames[-1].data["final_output"] == "summary"


async def test_autonomous_mode_needs_the_agent_to_allow_it(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(any_backend, alice, scripted_config())
    session = await create_session(any_backend, alice, agent["id"])
    response = await any_backend.post(
        f"/sessions/{session['id']}/turns", json={"input": "x", "mode": "autonomous"}, headers=alice
    )
    assert response.status_code == 422
    assert response.json()["code"] == "autonomy_disabled"
    turns = await any_backend.get(f"/sessions/{session['id']}/turns", headers=alice)
    assert turns.json()["items"] == []


async def test_a_loop_limit_mid_plan_ends_the_turn_with_what_was_done(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    frames = await autonomous_turn(any_backend, alice, *THREE_STEPS, limits={"max_loops": 3})
    ended = frames[-1].data
    assert ended["status"] == "loop_limit"
    assert [e["status"] for e in of(frames, "plan.step.completed")] == ["done", "failed"]
    assert "step one done" in ended["final_output"]


async def test_an_enqueued_autonomous_turn_runs_autonomous_when_it_starts(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    busy = {"text": " ".join(f"w{i}" for i in range(40))}
    config = scripted_config(busy, plan("only"), {"text": "step done"}, {"text": "summary"}, autonomy=AUTONOMY)
    config["model"]["chunk_delay_ms"] = 25
    session = await create_session(any_backend, alice, (await create_agent(any_backend, alice, config))["id"])
    url, later = f"/sessions/{session['id']}/turns", {**alice, "Prefer": "respond-async"}
    first = (await any_backend.post(url, json={"input": "chat first"}, headers=later)).json()["id"]
    body = {"input": "then plan", "mode": "autonomous", "multitask_strategy": "enqueue"}
    queued = await any_backend.post(url, json=body, headers=later)
    assert queued.json()["status"] == "queued", queued.text

    frames = await read_turn(any_backend, "GET", f"/turns/{queued.json()['id']}/events", headers=alice)

    assert (await any_backend.get(f"/turns/{first}", headers=alice)).json()["status"] == "completed"
    assert [e["todos"] for e in of(frames, "plan.created")] == [[{"id": "todo_1", "title": "only"}]]
    assert (frames[-1].data["status"], frames[-1].data["final_output"]) == ("completed", "summary")
