"""Finishing a stopped tool batch from our side, before Claude Code resumes at the reply that made it.

Two runs pick up a batch Claude Code did not finish: an approval's resume, and the continuation of
a turn whose run was lost. Per call, in the reply's order: a result the conversation already holds
is kept as it is; a result the ledger holds is recorded; a call dispatched without a stored outcome
(a lost run's) is sent again under the same idempotency key, not judged again (it was judged before
it left); a human's decision is honoured; the rest goes through the gate and runs. The results
become the next user message of Claude Code's conversation (`tool_results_message`), so the model
sees its own calls answered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from app.claude_sdk.turn import SdkTurn
from app.governance.policy import arguments_hash
from app.providers.base import ToolCall
from app.runtime.port.events import ToolCallCompleted, ToolCallRequested
from app.runtime.port.journal import Continued, HumanDecision
from app.tools.base import ToolResult

LOST_NATIVE = (
    "the replica running this call stopped before its outcome was stored: it may or may not have run. "
    "Check before making it again."
)
"""A `claude:` tool runs inside Claude Code, where no idempotency key reaches: it is never run twice blindly."""


async def finish_batch(
    turn: SdkTurn,
    calls: Sequence[ToolCall],
    *,
    answered: Mapping[str, ToolResult],
    continued: Continued | None = None,
) -> list[ToolResult] | None:
    """The results of the batch's calls, in order; None if a call waits for a human (the turn stops).

    `answered`: results stored as the conversation's tool messages (nothing more is recorded for
    them). `continued`: a continuation's, which says what the lost run stored: a call's
    `tool_call.requested` it never stored is emitted again before the call's outcome.
    """
    results: list[ToolResult] = []
    for call in calls:
        turn.calls[call.id] = call
        if call.id in answered:
            results.append(answered[call.id])
            continue
        if continued is not None and not continued.stored("tool_call.requested", call.id):
            turn.journal.event(ToolCallRequested(tool_call_id=call.id, name=call.name, arguments=call.arguments))
        result = await _outcome(turn, call, continuing=continued is not None)
        if result is None:
            return None
        results.append(result)
        turn.journal.tool_result(call, result)
        if continued is None or not continued.stored("tool_call.completed", call.id):
            completed = ToolCallCompleted(
                tool_call_id=call.id, name=call.name, is_error=result.is_error, result=result.content
            )
            turn.journal.event(completed)
    return results


async def _outcome(turn: SdkTurn, call: ToolCall, *, continuing: bool) -> ToolResult | None:
    key, loop = turn.key(call.id), turn.progress.loop_count
    stored = await turn.journal.ledger_get(key)
    if stored is not None:
        return stored
    sent = await turn.journal.ledger_dispatched(key)
    if sent is not None:
        return await _dispatch(turn, dataclasses.replace(call, arguments=sent), key, loop)
    human = turn.run.decisions.get(call.id)
    if human is not None:
        return await _decided(turn, call, human)
    if continuing and turn.surface.is_native(call.name):
        return await turn.journal.ledger_put(key, loop, call, ToolResult(LOST_NATIVE, is_error=True))
    verdict = await turn.on_verdict(
        call.id, call.name, call.arguments, await turn.gate.judge(call.name, call.arguments, call.id)
    )
    if verdict.outcome in ("requires_approval", "held"):
        return None
    return turn.results.get(call.id) or await _execute(turn, call)


async def _decided(turn: SdkTurn, call: ToolCall, human: HumanDecision) -> ToolResult:
    if human["decision"] != "approve":
        denied = ToolResult(f"denied by a human: {human['reason'] or 'no reason given'}", is_error=True)
        return await turn.journal.ledger_put(turn.key(call.id), turn.progress.loop_count, call, denied)
    if human["arguments"] is not None:
        call = dataclasses.replace(call, arguments=human["arguments"])
    return await _execute(turn, call)


async def _execute(turn: SdkTurn, call: ToolCall) -> ToolResult:
    """Run a call of the stopped batch from our side (a native tool is allowed when the model makes it again)."""
    key, loop = turn.key(call.id), turn.progress.loop_count
    if turn.surface.is_native(call.name):
        turn.grants.add((call.name, arguments_hash(call.arguments)))
        note = f"approved: make this {call.name} call again, with the same arguments, to run it"
        return await turn.journal.ledger_put(key, loop, call, ToolResult(note))
    await turn.journal.dispatched(key, loop, call)
    return await _dispatch(turn, call, key, loop)


async def _dispatch(turn: SdkTurn, call: ToolCall, key: str, loop: int) -> ToolResult:
    return await turn.journal.ledger_put(key, loop, call, await turn.execute(call, key))


def tool_results_message(
    calls: Sequence[ToolCall], results: Sequence[ToolResult], *, skip: frozenset[str]
) -> dict[str, Any]:
    """The user message answering the batch's calls, but those Claude Code already holds (`skip`)."""
    blocks = [
        {"type": "tool_result", "tool_use_id": call.id, "content": result.content, "is_error": result.is_error}
        for call, result in zip(calls, results, strict=True)
        if call.id not in skip
    ]
    return {"type": "user", "message": {"role": "user", "content": blocks}, "parent_tool_use_id": None}
