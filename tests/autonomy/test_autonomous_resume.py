"""Autonomous turns on PostgreSQL and SQLite: across an approval and a restart, the plan on GET, plan_update,
cancel mid-plan."""

from __future__ import annotations

import json

import httpx

from app.settings import Settings
from tests.autonomy.support import AUTONOMY, of
from tests.conftest import running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn
from tests.turns.support import FrameReader

GATE_CALCULATOR = {"id": "calc", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}
GATED_STEP_2 = scripted_config(
    {"text": json.dumps({"todos": [{"title": "echo"}, {"title": "compute"}, {"title": "report"}]})},
    {"tool_calls": [{"name": "echo", "arguments": {"text": "one"}}]},
    {"text": "echoed"},
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "computed 42"},
    {"tool_calls": [{"name": "echo", "arguments": {"text": "three"}}]},
    {"text": "reported"},
    {"text": "echoed, computed 42, reported"},
    autonomy=AUTONOMY,
    policies=[GATE_CALCULATOR],
)


async def test_an_approval_in_step_two_resumes_that_step_after_a_restart_and_the_plan_goes_on(
    backend: Settings, alice: dict[str, str]
) -> None:
    async with running_app(backend) as (_, client):
        agent = await create_agent(client, alice, GATED_STEP_2)
        session = await create_session(client, alice, agent["id"])
        url = f"/sessions/{session['id']}/turns"
        first = await read_turn(client, "POST", url, json={"input": "go", "mode": "autonomous"}, headers=alice)
        assert first[-1].data["status"] == "interrupted"
        assert [e["todo_id"] for e in of(first, "plan.step.started")] == ["todo_1", "todo_2"]
        assert [e["todo_id"] for e in of(first, "plan.step.completed")] == ["todo_1"]
        approval_id = of(first, "approval.required")[0]["approval_id"]
        turn_id = first[0].data["turn_id"]
    async with running_app(backend) as (_, client):
        waiting = (await client.get(f"/turns/{turn_id}", headers=alice)).json()
        assert [(t["id"], t["status"]) for t in waiting["plan"]] == [
            ("todo_1", "done"), ("todo_2", "running"), ("todo_3", "pending"),
        ]  # fmt: skip
        resumed = await read_turn(
            client, "POST", f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice
        )
        assert [e["result"] for e in of(resumed, "tool_call.completed")] == ["42", "three"]
        assert of(resumed, "plan.created") == []
        assert [(e["todo_id"], e["status"], e["output"]) for e in of(resumed, "plan.step.completed")] == [
            ("todo_2", "done", "computed 42"), ("todo_3", "done", "reported"),
        ]  # fmt: skip
        ended = resumed[-1].data
        assert (ended["status"], ended["final_output"]) == ("completed", "echoed, computed 42, reported")
        turn = (await client.get(f"/turns/{turn_id}", headers=alice)).json()
        assert turn["mode"] == "autonomous"
        assert [(t["id"], t["title"], t["status"], t["output"]) for t in turn["plan"]] == [
            ("todo_1", "echo", "done", "echoed"),
            ("todo_2", "compute", "done", "computed 42"),
            ("todo_3", "report", "done", "reported"),
        ]
        executed = await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=alice)
        assert [e["result"] for e in of(executed, "tool_call.completed")] == ["one", "42", "three"]


async def test_an_interactive_turn_has_no_plan(any_backend: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(any_backend, alice, scripted_config(autonomy=AUTONOMY))
    session = await create_session(any_backend, alice, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    frames = await read_turn(any_backend, "POST", url, json={"input": "hi"}, headers=alice)
    turn = (await any_backend.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert (turn["mode"], turn["plan"]) == ("interactive", None)
    assert of(frames, "plan.created") == []


async def test_cancel_mid_plan_stops_inside_the_step(live_backend: httpx.AsyncClient, alice: dict[str, str]) -> None:
    slow = " ".join(f"w{i}" for i in range(400))
    config = scripted_config(
        {"text": json.dumps({"todos": [{"title": "quick"}, {"title": "slow"}, {"title": "never"}]})},
        {"text": "quick done"},
        {"text": slow},
        {"text": "never reached"},
        autonomy=AUTONOMY,
    )
    config["model"]["chunk_delay_ms"] = 20
    agent = await create_agent(live_backend, alice, config)
    session = await create_session(live_backend, alice, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    async with live_backend.stream("POST", url, json={"input": "go", "mode": "autonomous"}, headers=alice) as response:
        reader = FrameReader(response)
        seen = await reader.until("plan.step.completed")
        seen += await reader.until("plan.step.started")
        seen += await reader.until("message.delta")
        cancelled = await live_backend.post(f"/turns/{seen[0].data['turn_id']}/cancel", headers=alice)
        assert cancelled.json()["status"] == "cancelled"
        rest = await reader.rest()
    frames = seen + rest
    assert frames[-1].data["status"] == "cancelled"
    assert [e["todo_id"] for e in of(frames, "plan.step.started")] == ["todo_1", "todo_2"]
    assert [e["todo_id"] for e in of(frames, "plan.step.completed")] == ["todo_1"]


async def test_a_step_adds_a_todo_and_skips_one_through_plan_update(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    update = {"name": "plan_update", "arguments": {"skip": ["todo_2"], "add": [{"title": "extra"}]}}
    config = scripted_config(
        {"text": json.dumps({"todos": [{"title": "revise"}, {"title": "unneeded"}]})},
        {"tool_calls": [update]},
        {"text": "revised"},
        {"text": "extra done"},
        {"text": "revised, then the extra"},
        autonomy=AUTONOMY,
    )
    agent = await create_agent(any_backend, alice, config)
    session = await create_session(any_backend, alice, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    frames = await read_turn(any_backend, "POST", url, json={"input": "go", "mode": "autonomous"}, headers=alice)
    assert [e["verdict"] for e in of(frames, "policy.decision") if e["point"] == "tool"] == ["allow"]
    assert [[t["id"] for t in e["todos"]] for e in of(frames, "plan.created")] == [
        ["todo_1", "todo_2"], ["todo_1", "todo_2", "todo_3"],
    ]  # fmt: skip
    assert [(e["todo_id"], e["status"]) for e in of(frames, "plan.step.completed")] == [
        ("todo_2", "skipped"), ("todo_1", "done"), ("todo_3", "done"),
    ]  # fmt: skip
    assert [e["todo_id"] for e in of(frames, "plan.step.started")] == ["todo_1", "todo_3"]
    assert frames[-1].data["final_output"] == "revised, then the extra"
    turn = (await any_backend.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert [(t["id"], t["status"]) for t in turn["plan"]] == [
        ("todo_1", "done"),
        ("todo_2", "skipped"),
        ("todo_3", "done"),
    ]


async def test_plan_update_cannot_grow_the_plan_beyond_max_steps(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    update = {"name": "plan_update", "arguments": {"add": [{"title": "one too many"}]}}
    config = scripted_config(
        {"text": json.dumps({"todos": [{"title": "a"}, {"title": "b"}]})},
        {"tool_calls": [update]},
        {"text": "a done"},
        {"text": "b done"},
        {"text": "summary"},
        autonomy={"enabled": True, "max_steps": 2},
    )
    agent = await create_agent(any_backend, alice, config)
    session = await create_session(any_backend, alice, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    frames = await read_turn(any_backend, "POST", url, json={"input": "go", "mode": "autonomous"}, headers=alice)
    result = of(frames, "tool_call.completed")[0]
    assert result["is_error"] is True
    assert "at most 2 todos" in result["result"]
    assert len(of(frames, "plan.created")) == 1
    assert frames[-1].data["status"] == "completed"
