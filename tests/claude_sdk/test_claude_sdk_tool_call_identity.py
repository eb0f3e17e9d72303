"""A tool call's identity on the Claude SDK runtime (docs/decisions.md "A tool call's identity"): two turns whose
model calls `echo` under the same `tool_use` id each judge and run their own call, and the second turn's
model is sent the second result (tests/tools/test_tool_call_identity.py has the LangGraph runtime's)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import PolicyDecision, ToolExecution
from app.tools.ledger_keys import idempotency_key
from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, turn

ECHO = "mcp__agent__echo"
SHARED_ID = "toolu_same"


def _tool_results(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool_use_id, text) of each tool_result block of a Messages API message."""
    results = []
    for block in message["content"] if isinstance(message["content"], list) else []:
        if block.get("type") == "tool_result":
            inner = block["content"]
            text = inner if isinstance(inner, str) else "".join(part.get("text", "") for part in inner)
            results.append((block["tool_use_id"], text))
    return results


async def _two_echo_turns(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine, ids: tuple[str, str]
) -> tuple[str, list[str]]:
    """Two turns of one session, each calling `echo` once (under `ids`); each call judged, run and ledgered
    under its own turn's key. The session id and the two calls' ids."""
    session_id = await new_session(api, alice)
    anthropic.play(
        Step(tool_calls=[(ECHO, {"text": "first"})], tool_ids=ids[:1]),
        Step(text="tool said: first"),
        Step(tool_calls=[(ECHO, {"text": "second"})], tool_ids=ids[1:]),
        Step(text="tool said: second"),
    )
    first = await turn(api, alice, session_id, "say first")
    second = await turn(api, alice, session_id, "say second")

    calls = []
    for frames, said in ((first, "first"), (second, "second")):
        assert (frames[-1].data["status"], frames[-1].data["final_output"]) == ("completed", f"tool said: {said}")
        [requested] = of(frames, "tool_call.requested")
        assert (requested["name"], requested["arguments"]) == ("echo", {"text": said})
        call_id = requested["tool_call_id"]
        decisions = [(d["tool_call_id"], d["verdict"]) for d in of(frames, "policy.decision") if d["point"] == "tool"]
        assert decisions == [(call_id, "allow")], "the call is judged"
        completed = of(frames, "tool_call.completed")
        assert [(c["tool_call_id"], c["result"], c["is_error"]) for c in completed] == [(call_id, said, False)]
        calls.append(call_id)
    turns = [uuid.UUID(frames[0].data["turn_id"]) for frames in (first, second)]
    async with sql.connect() as conn:
        ledger = await conn.execute(
            select(ToolExecution.turn_id, ToolExecution.idempotency_key, ToolExecution.result)
            .where(ToolExecution.turn_id.in_(turns))
            .order_by(ToolExecution.created_at)
        )
        receipts = await conn.execute(
            select(PolicyDecision.turn_id).where(PolicyDecision.turn_id.in_(turns), PolicyDecision.point == "tool")
        )
        rows, judged = ledger.all(), sorted(r.turn_id for r in receipts)
    assert [(r.turn_id, r.idempotency_key, r.result) for r in rows] == [
        (turn_id, idempotency_key(session_id, str(turn_id), call_id), said)
        for turn_id, call_id, said in zip(turns, calls, ("first", "second"), strict=True)
    ]
    assert judged == sorted(turns)
    return session_id, calls


async def test_two_turns_calling_echo_each_judge_and_run_their_own_call_and_the_model_sees_the_second_result(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine
) -> None:
    _, calls = await _two_echo_turns(api, alice, anthropic, sql, ("toolu_echo_1", "toolu_echo_2"))

    answered = [r for r in anthropic.loop_requests() if _tool_results(r["messages"][-1])]
    [(call_id, text)] = _tool_results(answered[-1]["messages"][-1])
    assert call_id == calls[1]
    assert text.startswith("second"), text


async def test_two_turns_whose_calls_share_a_tool_use_id_each_judge_and_run_their_own(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic, sql: AsyncEngine
) -> None:
    """A server that repeats a `tool_use` id: the second turn's call is judged and run under its own key,
    never answered from the first turn's ledger row. (Claude Code itself answers a repeated id in its
    conversation "[Tool use interrupted]" to the model: its transcript is its own, the ids in it too.)"""
    _, calls = await _two_echo_turns(api, alice, anthropic, sql, (SHARED_ID, SHARED_ID))

    assert calls == [SHARED_ID, SHARED_ID]
