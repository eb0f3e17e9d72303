"""Turns of `"runtime": "claude_sdk"` agents through the API: the real SDK and Claude Code, the loopback model.

The service runs with at most one Claude Code process (`CLAUDE_SDK_MAX_SESSIONS=1`), so the tests
share it where they can (each new session takes the idle process's place).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.claude_sdk.pool import ClientPool
from app.models import PolicyDecision, ToolExecution
from app.settings import Settings
from tests.claude_sdk.conftest import claude_children
from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, session_after_one_turn, turn
from tests.conftest import running_app
from tests.sse import read_turn
from tests.turns.support import wait_for_stored_event

APPROVAL_WRITE_SECONDS = 0.3
TURN_TIMEOUT_SECONDS = 60.0


async def test_a_text_turn_streams_stores_and_replays(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="Hello from Claude Code"))

    frames = await turn(api, alice, session_id, "hi")

    assert frames[0].event == "turn.started"
    assert "".join(d["text"] for d in of(frames, "message.delta")) == "Hello from Claude Code"
    assert [d["text"] for d in of(frames, "message.completed")] == ["Hello from Claude Code"]
    assert of(frames, "usage")[0]["output_tokens"] == 4
    ended = frames[-1]
    assert ended.event == "turn.ended"
    assert ended.data["status"] == "completed"
    assert ended.data["final_output"] == "Hello from Claude Code"
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    turn_id = frames[0].data["turn_id"]
    replay = await read_turn(api, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert [(f.id, f.event, f.data) for f in replay] == [(f.id, f.event, f.data) for f in frames]
    stored = (await api.get(f"/turns/{turn_id}", headers=alice)).json()
    assert stored["status"] == "completed"
    assert stored["usage"]["output_tokens"] == 4
    messages = (await api.get(f"/sessions/{session_id}/messages", headers=alice)).json()["items"]
    assert [(m["role"], m["content"]) for m in messages] == [("user", "hi"), ("assistant", "Hello from Claude Code")]


async def test_the_next_turn_reuses_the_session_process_and_its_conversation(
    api: httpx.AsyncClient, pool: ClientPool, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="first answer"), Step(text="second answer"))

    await turn(api, alice, session_id, "first question")
    lease = pool.get(uuid.UUID(session_id))
    frames = await turn(api, alice, session_id, "second question")

    assert frames[-1].data["final_output"] == "second answer"
    assert pool.get(uuid.UUID(session_id)) is lease
    assert lease.turns == 2
    sent = str(anthropic.loop_requests()[-1]["messages"])
    assert "first question" in sent
    assert "first answer" in sent


async def test_a_governed_tool_turn_allows_denies_and_keeps_receipts_and_ledger(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(
        Step(text="Echoing.", tool_calls=[("mcp__agent__echo", {"text": "one"})]),
        Step(tool_calls=[("mcp__agent__echo", {"text": "two"})]),
        Step(text="done echoing"),
    )

    frames = await turn(api, alice, session_id, "echo one, then two")

    requested = of(frames, "tool_call.requested")
    assert [(r["name"], r["arguments"]) for r in requested] == [("echo", {"text": "one"}), ("echo", {"text": "two"})]
    decisions = of(frames, "policy.decision")
    assert [(d["verdict"], d["rule_id"]) for d in decisions] == [("allow", None), ("deny", "no-twos")]
    completed = of(frames, "tool_call.completed")
    assert [(c["result"], c["is_error"]) for c in completed] == [
        ("one", False),
        ("denied by policy: twos are not allowed", True),
    ]
    assert frames[-1].data["status"] == "completed"
    assert frames[-1].data["final_output"] == "done echoing"
    assert frames[-1].data["loop_count"] == 2
    turn_id = uuid.UUID(frames[0].data["turn_id"])
    async with sql.connect() as conn:
        receipts = (await conn.execute(select(PolicyDecision.verdict).where(PolicyDecision.turn_id == turn_id))).all()
        ledger = (await conn.execute(select(ToolExecution.tool_name).where(ToolExecution.turn_id == turn_id))).all()
    assert sorted(r.verdict for r in receipts) == ["allow", "deny"]
    assert len(ledger) == 2


async def test_an_approval_resumes_the_sdk_session_at_the_call_after_a_restart(
    sdk_settings: Settings,
    sdk_app: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    anthropic: MockAnthropic,
) -> None:
    api = sdk_app[1]
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="Let me compute.", tool_calls=[("mcp__agent__calculator", {"expression": "6*7"})]))
    frames = await turn(api, alice, session_id, "what is six times seven?")
    assert frames[-1].data["status"] == "interrupted"
    (required,) = of(frames, "approval.required")
    assert required["name"] == "calculator"
    assert of(frames, "tool_call.completed") == []
    await sdk_app[0].state.container.claude_sdk.pool.close_all()  # the process is gone, as after a restart

    anthropic.play(Step(text="It is 42."))
    async with running_app(sdk_settings) as (_, restarted):
        resumed = await read_turn(
            restarted, "POST", f"/approvals/{required['approval_id']}", json={"decision": "approve"}, headers=alice
        )

    assert resumed[0].data["resumed_by"] == required["approval_id"]
    assert resumed[0].id == frames[-1].id + 1
    assert [(c["tool_call_id"], c["result"]) for c in of(resumed, "tool_call.completed")] == [
        (required["tool_call_id"], "42")
    ]
    assert resumed[-1].data["status"] == "completed"
    assert resumed[-1].data["final_output"] == "It is 42."
    last = anthropic.loop_requests()[-1]["messages"]
    asked, answered = last[-2], last[-1]
    assert asked["role"] == "assistant"
    assert [b["id"] for b in asked["content"] if b["type"] == "tool_use"] == [required["tool_call_id"]]
    (result,) = [b for b in answered["content"] if b.get("type") == "tool_result"]
    assert result["tool_use_id"] == required["tool_call_id"]
    assert str(result["content"]).startswith("42")


async def test_an_approval_asked_by_a_hook_claude_code_cancels_is_still_stored_before_the_turns_end(
    sdk_app: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    anthropic: MockAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hook that asks for a human sets the turn's stop, and the stop interrupts Claude Code, which
    cancels the hook still in flight (`control_cancel_request`). The approval it was storing is stored
    anyway, and the run ends only after it: row, `approval.required`, then `turn.ended`."""
    app, api = sdk_app
    pool: ClientPool = app.state.container.claude_sdk.pool
    store = app.state.container.turns.store
    stored = store.create_approvals
    sessions: list[str] = []

    async def interrupted_meanwhile(rows: Any) -> None:
        await pool.get(uuid.UUID(sessions[0])).client.sdk.interrupt()  # as the stop does when the reply closes
        await asyncio.sleep(APPROVAL_WRITE_SECONDS)
        await stored(rows)

    monkeypatch.setattr(store, "create_approvals", interrupted_meanwhile)
    session_id = await new_session(api, alice)
    sessions.append(session_id)
    anthropic.play(Step(text="Let me compute.", tool_calls=[("mcp__agent__calculator", {"expression": "6*7"})]))

    async with asyncio.timeout(TURN_TIMEOUT_SECONDS):
        frames = await turn(api, alice, session_id, "what is six times seven?")

    assert [f.event for f in frames][-2:] == ["approval.required", "turn.ended"], " ".join(f.event for f in frames)
    assert frames[-1].data["status"] == "interrupted"
    (required,) = of(frames, "approval.required")
    assert (await api.get(f"/approvals/{required['approval_id']}", headers=alice)).json()["status"] == "pending"


async def test_cancel_interrupts_claude_code_and_the_session_goes_on(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine
) -> None:
    session_id = await new_session(api, alice)
    held = Step(text="a long answer that never ends", hold=asyncio.Event())
    anthropic.play(held)
    running = asyncio.create_task(turn(api, alice, session_id, "talk"))  # ASGITransport returns whole responses
    try:
        await asyncio.wait_for(held.holding.wait(), 60)
        (active,) = (await api.get(f"/sessions/{session_id}/turns", headers=alice)).json()["items"]
        # the mock sent its first word; Claude Code passes it on in its own time
        await wait_for_stored_event(sql, active["id"], "message.delta")
        response = await api.post(f"/turns/{active['id']}/cancel", headers=alice)
        frames = await asyncio.wait_for(running, 60)
    finally:
        assert held.hold is not None
        held.hold.set()
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    assert frames[-1].event == "turn.ended"
    assert frames[-1].data["status"] == "cancelled"
    assert "".join(d["text"] for d in of(frames, "message.delta")).startswith("a ")

    anthropic.play(Step(text="still here"))
    after = await turn(api, alice, session_id, "are you there?")
    assert after[-1].data["status"] == "completed"
    assert after[-1].data["final_output"] == "still here"


async def test_beyond_the_process_bound_a_turn_answers_429(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    busy = await new_session(api, alice)
    other = await new_session(api, alice)
    held = Step(text="busy for a while", hold=asyncio.Event())
    anthropic.play(held)
    running = asyncio.create_task(turn(api, alice, busy, "work"))
    try:
        await asyncio.wait_for(held.holding.wait(), 60)
        refused = await api.post(f"/sessions/{other}/turns", json={"input": "me too"}, headers=alice)
    finally:
        assert held.hold is not None
        held.hold.set()
    frames = await asyncio.wait_for(running, 60)
    assert frames[-1].data["status"] == "completed"
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "too_many_turns"
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await api.get(f"/sessions/{other}/turns", headers=alice)).json()["items"] == []


async def test_an_idle_process_is_closed_and_the_next_turn_resumes_the_conversation(
    api: httpx.AsyncClient, pool: ClientPool, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await session_after_one_turn(api, alice, anthropic, "remember the word teapot")

    pool.idle_seconds = 0.0
    try:
        assert await pool.reap() == 1
    finally:
        pool.idle_seconds = 300.0
    assert pool.get(uuid.UUID(session_id)) is None

    anthropic.play(Step(text="it was teapot"))
    frames = await turn(api, alice, session_id, "which word?")
    assert frames[-1].data["final_output"] == "it was teapot"
    assert "remember the word teapot" in str(anthropic.loop_requests()[-1]["messages"])


async def test_a_claude_tool_works_in_the_session_folder_only(
    sdk_settings: Settings, api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, tmp_path: Path
) -> None:
    session_id = await new_session(api, alice, tools=["claude:Write", "claude:Read"], policies=[])
    work = sdk_settings.data_dir.resolve() / "claude" / session_id / "work"
    outside = tmp_path / "outside.txt"
    anthropic.play(
        Step(tool_calls=[("Write", {"file_path": str(work / "note.txt"), "content": "kept inside"})]),
        Step(tool_calls=[("Write", {"file_path": str(outside), "content": "escaped"})]),
        Step(text="wrote what I could"),
    )

    frames = await turn(api, alice, session_id, "write two files")

    completed = of(frames, "tool_call.completed")
    assert [(c["name"], c["is_error"]) for c in completed] == [("Write", False), ("Write", True)]
    assert (work / "note.txt").read_text() == "kept inside"
    assert not outside.exists()
    assert [d["rule_id"] for d in of(frames, "policy.decision")] == [None, "outside_workdir"]


async def test_closing_the_session_ends_its_process(
    api: httpx.AsyncClient, pool: ClientPool, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await session_after_one_turn(api, alice, anthropic, "hello")
    assert pool.get(uuid.UUID(session_id)) is not None
    assert len(claude_children()) == 1

    response = await api.delete(f"/sessions/{session_id}", headers=alice)

    assert response.status_code == 204
    assert pool.get(uuid.UUID(session_id)) is None
    assert claude_children() == set()


async def test_a_reply_asking_for_tools_at_max_loops_ends_the_turn_loop_limit(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, limits={"max_loops": 1})
    anthropic.play(
        Step(tool_calls=[("mcp__agent__echo", {"text": "first"})]),
        Step(text="once more", tool_calls=[("mcp__agent__echo", {"text": "second"})]),
    )

    frames = await turn(api, alice, session_id, "echo twice")

    assert [c["result"] for c in of(frames, "tool_call.completed")] == ["first"]
    assert frames[-1].data["status"] == "loop_limit"
    assert frames[-1].data["final_output"] == "once more"
    assert frames[-1].data["loop_count"] == 1


async def test_output_past_the_budget_ends_the_turn_budget_exceeded(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, limits={"max_output_tokens": 3})
    anthropic.play(Step(text="this reply is longer than three tokens"), Step(text="never asked"))

    frames = await turn(api, alice, session_id, "talk")

    ended = frames[-1].data
    assert ended["status"] == "budget_exceeded"
    assert ended["error"]["code"] == "budget_exceeded"
    assert ended["error"]["spent"]["output_tokens"] == 7
    assert ended["final_output"] == "this reply is longer than three tokens"


async def test_a_human_denial_answers_the_waiting_call_and_the_model_goes_on(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(Step(tool_calls=[("mcp__agent__calculator", {"expression": "2+2"})]))
    frames = await turn(api, alice, session_id, "add two and two")
    (required,) = of(frames, "approval.required")

    anthropic.play(Step(text="Understood, no arithmetic."))
    resumed = await read_turn(
        api,
        "POST",
        f"/approvals/{required['approval_id']}",
        json={"decision": "deny", "reason": "not now"},
        headers=alice,
    )

    assert [(c["result"], c["is_error"]) for c in of(resumed, "tool_call.completed")] == [
        ("denied by a human: not now", True)
    ]
    assert resumed[-1].data["final_output"] == "Understood, no arithmetic."
    (result,) = [b for b in anthropic.loop_requests()[-1]["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert result["is_error"] is True
    assert "denied by a human: not now" in str(result["content"])


async def test_a_tool_nobody_offered_is_refused_with_an_unknown_tool_receipt(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(
        Step(tool_calls=[("Bash", {"command": "id"}), ("mcp__agent__launch_missiles", {})]),
        Step(text="I cannot do that"),
    )

    frames = await turn(api, alice, session_id, "try what is not offered")

    calls = [c["tool_call_id"] for c in of(frames, "tool_call.requested")]
    decisions = of(frames, "policy.decision")
    assert [(d["tool_call_id"], d["verdict"], d["rule_id"]) for d in decisions] == [
        (calls[0], "deny", "unknown_tool"), (calls[1], "deny", "unknown_tool"),
    ]  # fmt: skip
    assert "launch_missiles" in decisions[1]["reason"]
    assert [c["is_error"] for c in of(frames, "tool_call.completed")] == [True, True]
    assert frames[-1].data["status"] == "completed"
    turn_id = uuid.UUID(frames[0].data["turn_id"])
    async with sql.connect() as conn:
        receipts = (await conn.execute(select(PolicyDecision.rule_id).where(PolicyDecision.turn_id == turn_id))).all()
    assert [r.rule_id for r in receipts] == ["unknown_tool", "unknown_tool"]


async def test_a_reply_past_the_total_token_budget_ends_the_turn_before_its_tools_run(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, limits={"max_total_tokens": 100})
    anthropic.play(Step(text="Echoing.", tool_calls=[("mcp__agent__echo", {"text": "one"})]), Step(text="never"))

    frames = await turn(api, alice, session_id, "echo one")

    ended = frames[-1].data
    assert (ended["status"], ended["error"]["code"]) == ("budget_exceeded", "budget_exceeded")
    assert ended["error"]["spent"]["input_tokens"] + ended["error"]["spent"]["output_tokens"] > 100
    assert ended["final_output"] == "Echoing."
    assert of(frames, "tool_call.completed") == []
    assert len(anthropic.loop_requests()) == 1
