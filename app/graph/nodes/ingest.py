"""ingest_result and loop_limit_handler: close one loop, or the turn."""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.runtime import Runtime

from app.context.engine_client import ContextEngineError
from app.governance.budget import exceeded, spent_reason
from app.graph.context import TurnContext
from app.graph.nodes.common import traced
from app.graph.state import TurnState, budget_of, spent_of
from app.providers.base import ChatMessage
from app.runtime.port.events import ContextDegraded


@traced("ingest_result")
async def ingest_result(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    pending, results = state.get("pending", []), state.get("results", {})
    tool_messages = [
        ChatMessage(
            role="tool", content=results[c.id].content, tool_call_id=c.id, name=c.name, is_error=results[c.id].is_error
        )
        for c in pending
    ]
    for call in pending:
        ctx.journal.tool_result(call, results[call.id])
    await _ingest_into_engine(state, ctx, tool_messages)
    update: dict[str, Any] = {
        "new_messages": [*state.get("new_messages", []), *tool_messages],
        "loop_count": state.get("loop_count", 0) + 1,
        "pending": [],
        "results": {},
        "repairing": False,
    }
    if not pending and not state.get("repairing"):
        update["status"] = "completed"
    return update


async def _ingest_into_engine(state: TurnState, ctx: TurnContext, tool_messages: list[ChatMessage]) -> None:
    if ctx.context_engine is None or ctx.context_token is None:
        return
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in state.get("pending", [])]
    events: list[dict[str, Any]] = [*_attached_input(state)]
    events.append({"kind": "assistant_message", "text": state.get("last_text", ""), "tool_calls": calls})
    events += [
        {
            "kind": "tool_result",
            "tool_call_id": m.tool_call_id,
            "name": m.name,
            "content": m.content,
            "is_error": m.is_error,
        }
        for m in tool_messages
    ]
    for event in events:
        try:
            await ctx.context_engine.ingest_event(
                ctx.context_token(),
                session_id=str(ctx.ident.session_id),
                turn_id=str(ctx.ident.turn_id),
                loop=state.get("loop_count", 0),
                event=event,
            )
        except ContextEngineError as exc:
            ctx.journal.event(ContextDegraded(component="ingest", error=str(exc)))


def _attached_input(state: TurnState) -> list[dict[str, Any]]:
    """At a turn's first loop, a user message with attachments is ingested with their references
    (the engine keeps the conversation; the files stay ours, named by id)."""
    if state.get("loop_count", 0) or state.get("resume"):
        return []
    opening = next((m for m in reversed(state.get("history", [])) if m.role == "user"), None)
    if opening is None or not opening.attachments:
        return []
    refs = [dataclasses.asdict(a) for a in opening.attachments]
    return [{"kind": "user_message", "text": opening.content, "attachments": refs}]


@traced("loop_limit_handler")
async def loop_limit_handler(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    final_output = state.get("last_text", "")
    over = spent_reason(budget_of(state), spent_of(state))
    if over is None:
        return {"status": "loop_limit", "final_output": final_output}
    error = exceeded("budget_exceeded", over, spent_of(state))
    return {"status": "budget_exceeded", "error": error, "final_output": final_output}
