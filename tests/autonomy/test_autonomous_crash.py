"""An autonomous turn whose replica dies inside a step continues on another replica (PostgreSQL, two app
instances on loopback): the crash, the replicas and the recording MCP server are those of
tests/runtime/test_continuation.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.autonomy.support import AUTONOMY, of, plan
from tests.factories import create_agent, create_session, scripted_config
from tests.mcp_server import Gateway
from tests.runtime.test_continuation import (
    MCP_TOOLS,
    Hold,
    after_drop_rule,
    assert_gapless,
    calls_by_title,
    continued_on,
    die,
    first,
    frames_until,
    gateway,
    hold,
    mcp,
    quiet_shared_app,
    second,
    session_with,
)
from tests.sse import iter_frames
from tests.turns.support import POLL_TIMEOUT_SECONDS

__all__ = ["first", "gateway", "hold", "mcp", "quiet_shared_app", "second"]


def _file(title: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": title}}]}


async def test_a_crash_inside_step_two_continues_that_step_and_files_no_issue_twice(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    gateway: Gateway,
    hold: Hold,
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    first_app, first_client = first
    session = await session_with(
        first_client, alice,
        plan("file one", "file two", "report"),
        _file("one"), {"text": "one filed"},
        _file("two"), {"text": "two filed"},
        {"text": "reported"},
        {"text": "filed one and two"},
        autonomy=AUTONOMY, **MCP_TOOLS,
    )  # fmt: skip
    hold.reset("two")
    body = {"input": "file them", "mode": "autonomous"}
    async with first_client.stream("POST", f"/sessions/{session}/turns", json=body, headers=alice) as response:
        turn_id = (await anext(iter_frames(response))).data["turn_id"]
        assert await asyncio.to_thread(hold.reached.wait, POLL_TIMEOUT_SECONDS), "the call left"
        await die(first_app, sql)
    hold.reset(None)
    turn, frames = await continued_on(*second, alice, turn_id)
    kept = after_drop_rule(frames)

    assert (turn["status"], turn["final_output"]) == ("completed", "filed one and two")
    calls = calls_by_title(gateway)
    assert len(calls["one"]) == 1, "step 1's call never runs again"
    assert len(calls["two"]) == 2, "step 2's dispatched call is sent again"
    assert calls["two"][0] == calls["two"][1], "under the same idempotency key"
    assert_gapless(kept)
    [resumed] = [f for f in kept if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "replica_lost"
    assert resumed.data["from_loop"] == 2, "step 1's tool round and final reply; step 2's batch goes on at loop 2"
    assert [f.event for f in kept].count("turn.ended") == 1
    assert len(of(kept, "plan.created")) == 1
    assert [e["todo_id"] for e in of(kept, "plan.step.started")] == ["todo_1", "todo_2", "todo_3"]
    assert [(e["todo_id"], e["status"], e["output"]) for e in of(kept, "plan.step.completed")] == [
        ("todo_1", "done", "one filed"), ("todo_2", "done", "two filed"), ("todo_3", "done", "reported"),
    ]  # fmt: skip
    assert turn["plan"] == [
        {"id": "todo_1", "title": "file one", "status": "done", "output": "one filed"},
        {"id": "todo_2", "title": "file two", "status": "done", "output": "two filed"},
        {"id": "todo_3", "title": "report", "status": "done", "output": "reported"},
    ]


async def test_a_crash_while_the_plan_streams_plans_again(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    first_app, first_client = first
    config = scripted_config(plan("only"), {"text": "done"}, {"text": "all done"}, autonomy=AUTONOMY)
    config["model"]["chunk_delay_ms"] = 200
    agent = await create_agent(first_client, alice, config)
    session = (await create_session(first_client, alice, agent["id"]))["id"]
    body = {"input": "do it", "mode": "autonomous"}
    async with first_client.stream("POST", f"/sessions/{session}/turns", json=body, headers=alice) as response:
        seen = await frames_until(iter_frames(response), "message.delta")
        await die(first_app, sql)
    turn, frames = await continued_on(*second, alice, seen[0].data["turn_id"])
    kept = after_drop_rule(frames)

    assert (turn["status"], turn["final_output"]) == ("completed", "all done")
    assert_gapless(kept)
    events = [f.event for f in kept]
    assert events.count("turn.resumed") == 1
    assert events.index("turn.resumed") < events.index("plan.created"), "the plan is made by the continued run"
    assert [e["todos"] for e in of(kept, "plan.created")] == [[{"id": "todo_1", "title": "only"}]]
    assert [(e["todo_id"], e["status"]) for e in of(kept, "plan.step.completed")] == [("todo_1", "done")]
