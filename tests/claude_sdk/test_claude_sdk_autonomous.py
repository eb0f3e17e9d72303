"""Autonomous turns (PLAN / PURSUE) on the Claude SDK runtime: each step a Claude Code turn, governed as usual."""

from __future__ import annotations

import json
import uuid

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import ToolExecution
from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, turn
from tests.sse import read_turn

AUTONOMY = {"enabled": True, "max_steps": 5}


def plan(*titles: str) -> Step:
    return Step(text=json.dumps({"todos": [{"title": t} for t in titles]}))


def echo(text: str) -> Step:
    return Step(tool_calls=[("mcp__agent__echo", {"text": text})])


async def test_a_three_todo_plan_runs_a_governed_tool_per_step_in_claude_code(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine
) -> None:
    session_id = await new_session(api, alice, autonomy=AUTONOMY)
    anthropic.play(
        plan("first", "second", "third"),
        echo("one"), Step(text="step one done"),
        echo("zwei"), Step(text="step two done"),
        echo("three"), Step(text="step three done"),
        Step(text="all three steps are done"),
    )  # fmt: skip

    frames = await turn(api, alice, session_id, "echo one, two, three", mode="autonomous")

    (created,) = of(frames, "plan.created")
    assert [t["title"] for t in created["todos"]] == ["first", "second", "third"]
    completed = [(e["todo_id"], e["status"], e["output"]) for e in of(frames, "plan.step.completed")]
    assert completed == [
        ("todo_1", "done", "step one done"), ("todo_2", "done", "step two done"), ("todo_3", "done", "step three done"),
    ]  # fmt: skip
    assert [e["result"] for e in of(frames, "tool_call.completed")] == ["one", "zwei", "three"]
    assert [d["verdict"] for d in of(frames, "policy.decision") if d["point"] == "tool"] == ["allow"] * 3
    assert [u["kind"] for u in of(frames, "usage")] == ["plan", *["model"] * 6, "plan"]
    ended = frames[-1].data
    assert (ended["status"], ended["final_output"]) == ("completed", "all three steps are done")
    assert ended["loop_count"] == 3
    requests = anthropic.loop_requests()
    assert len(requests) == 8
    first_step = json.dumps(requests[1]["messages"])
    assert "step 1 of 3" in first_step
    assert "echo one, two, three" in first_step  # Claude Code never saw the plan call: the goal names the request
    assert "step 3 of 3" in json.dumps(requests[5]["messages"])
    turn_id = uuid.UUID(frames[0].data["turn_id"])
    async with sql.connect() as conn:
        keys = (await conn.execute(select(ToolExecution.idempotency_key).where(ToolExecution.turn_id == turn_id))).all()
    assert len({row.idempotency_key for row in keys}) == 3


async def test_an_approval_inside_a_step_resumes_claude_code_there_and_the_plan_goes_on(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, autonomy=AUTONOMY)
    anthropic.play(
        plan("multiply", "echo"),
        Step(text="Computing.", tool_calls=[("mcp__agent__calculator", {"expression": "6*7"})]),
    )
    frames = await turn(api, alice, session_id, "multiply, then echo", mode="autonomous")
    assert frames[-1].data["status"] == "interrupted"
    (required,) = of(frames, "approval.required")
    assert [e["todo_id"] for e in of(frames, "plan.step.started")] == ["todo_1"]

    anthropic.play(Step(text="it is 42"), echo("after"), Step(text="echoed"), Step(text="42, then echoed"))
    resumed = await read_turn(
        api, "POST", f"/approvals/{required['approval_id']}", json={"decision": "approve"}, headers=alice
    )

    assert [(c["tool_call_id"], c["result"]) for c in of(resumed, "tool_call.completed")] == [
        (required["tool_call_id"], "42"), (of(resumed, "tool_call.requested")[0]["tool_call_id"], "after"),
    ]  # fmt: skip
    assert [e["todo_id"] for e in of(resumed, "plan.step.started")] == ["todo_2"]
    completed = [(e["todo_id"], e["status"], e["output"]) for e in of(resumed, "plan.step.completed")]
    assert completed == [("todo_1", "done", "it is 42"), ("todo_2", "done", "echoed")]
    assert (resumed[-1].data["status"], resumed[-1].data["final_output"]) == ("completed", "42, then echoed")
    answered = anthropic.loop_requests()[2]["messages"][-1]
    (result,) = [b for b in answered["content"] if b.get("type") == "tool_result"]
    assert result["tool_use_id"] == required["tool_call_id"]
