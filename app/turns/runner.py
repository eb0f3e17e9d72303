"""Runs one invocation of the graph for a turn (a new turn or a resume) and settles its outcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from app.core import tracing
from app.core.logs import bind, get_logger
from app.core.metrics import TURNS_ENDED
from app.graph.context import TurnContext
from app.graph.state import HumanDecision, TurnState
from app.models.base import utcnow
from app.providers.base import ChatMessage
from app.turns.store import TurnIdentity, TurnStore, settle_turn
from app.turns.stream import TurnStream

log = logging.getLogger(__name__)
turn_log = get_logger("agent_runtime.turns")


@dataclass(slots=True)
class TurnRun:
    """Everything one run needs, read from the database when the turn starts or resumes."""

    ident: TurnIdentity
    agent_version: int
    owner_sub: str
    snapshot: dict[str, Any]
    input: str
    history: list[ChatMessage]
    max_loops: int
    max_output_tokens: int
    last_seq: int = 0
    loop_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    resumed_by: uuid.UUID | None = None
    decisions: dict[str, HumanDecision] = field(default_factory=dict)
    resume_state: dict[str, Any] = field(default_factory=dict)

    def initial_state(self) -> TurnState:
        state: TurnState = {
            "input": self.input,
            "max_loops": self.max_loops,
            "max_output_tokens": self.max_output_tokens,
            "loop_count": self.loop_count,
            "model_calls": sum(1 for m in self.history if m.role == "assistant"),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "history": self.history,
            "new_messages": [],
            "status": None,
            "error": None,
        }
        if self.resumed_by is None:
            return state
        resumed = {**state, **self.resume_state, "resume": True, "decisions": self.decisions}
        return resumed  # type: ignore[return-value]


SHUTDOWN = "shutdown"
"""The cancel message of a task stopped because the process stops (not a user's cancel)."""


async def execute(graph: Any, run: TurnRun, ctx: TurnContext, stream: TurnStream, store: TurnStore) -> str:
    """Run the graph to a terminal state and record it; returns the turn's final status."""
    ident = run.ident
    bind(tenant_id=ident.tenant_id, session_id=str(ident.session_id), turn_id=str(ident.turn_id))
    with tracing.span("invoke_agent", agent_span_attributes(run)) as span:
        status, error = await _execute(graph, run, ctx, stream, store)
        if span is not None:
            span.set_attribute("agent_runtime.turn.status", status)
            if error is not None:
                tracing.set_error(span, str(error.get("code")), str(error.get("message") or ""))
    if error is not None and status == "failed":
        turn_log.warning("turn failed", status=status, error_code=error.get("code"))
    elif error is not None:
        turn_log.info("turn ended", status=status, error_code=error.get("code"))
    return status


def agent_span_attributes(run: TurnRun) -> dict[str, str | int]:
    """GenAI semantic conventions for `invoke_agent` (agent, conversation = session)."""
    model = run.snapshot.get("model") or {}
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": str(run.ident.agent_id),
        "gen_ai.conversation.id": str(run.ident.session_id),
        "gen_ai.provider.name": str(model.get("provider", "")),
        "gen_ai.request.model": str(model.get("name") or model.get("provider", "")),
        "agent_runtime.turn.id": str(run.ident.turn_id),
        "agent_runtime.agent.version": run.agent_version,
    }


async def _execute(
    graph: Any, run: TurnRun, ctx: TurnContext, stream: TurnStream, store: TurnStore
) -> tuple[str, dict[str, Any] | None]:
    stream.emit(
        "turn.started",
        {
            "session_id": str(run.ident.session_id),
            "agent_id": str(run.ident.agent_id),
            "agent_version": run.agent_version,
            "resumed_by": str(run.resumed_by) if run.resumed_by else None,
        },
    )
    last: TurnState = run.initial_state()
    try:
        async for values in graph.astream(last, context=ctx, stream_mode="values"):
            last = values
        outcome = _outcome(last)
    except asyncio.CancelledError as exc:
        shutting_down = SHUTDOWN in exc.args
        outcome = (
            {"status": "failed", "error": {"code": "server_restarted", "message": "the service stopped mid-turn"}}
            if shutting_down
            else {"status": "cancelled", "error": None}
        )
    except Exception as exc:
        log.exception("turn %s failed", run.ident.turn_id)
        outcome = {"status": "failed", "error": {"code": "internal_error", "message": type(exc).__name__}}
    status = await _despite_cancel(settle(store, stream, run, last, outcome))
    TURNS_ENDED.labels(status=status).inc()
    error: dict[str, Any] | None = outcome["error"] if status == outcome["status"] else None
    return status, error


async def _despite_cancel(settling: Coroutine[Any, Any, str]) -> str:
    """Run the settlement to its end even if cancelled again (a second cancel, a shutdown).

    The outcome is decided by now; cut short, the turn would stay `running` and its stream would
    end without `turn.ended`.
    """
    task = asyncio.ensure_future(settling)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    return task.result()


def _outcome(state: TurnState) -> dict[str, Any]:
    status = state.get("status") or "failed"
    error = state.get("error")
    if status == "failed" and error is None:
        error = {"code": "internal_error", "message": "the loop stopped without an outcome"}
    return {"status": status, "error": error}


async def settle(store: TurnStore, stream: TurnStream, run: TurnRun, state: TurnState, outcome: dict[str, Any]) -> str:
    status: str = outcome["status"]
    usage = {"input_tokens": state.get("input_tokens", 0), "output_tokens": state.get("output_tokens", 0)}
    final_output = state.get("final_output") if status != "failed" else None
    if status in ("loop_limit", "budget_exceeded", "cancelled") and final_output is None:
        final_output = state.get("last_text") or None
    values: dict[str, Any] = {
        "status": status,
        "final_output": final_output,
        "error": outcome["error"],
        **usage,
        "loop_count": state.get("loop_count", 0),
        "last_seq": stream.last_seq + 1,
    }
    if status != "interrupted":
        values["ended_at"] = utcnow()
    ended = {
        "status": status, "final_output": final_output, "usage": usage, "loop_count": values["loop_count"],
        "error": outcome["error"],
    }  # fmt: skip
    settle_row = settle_turn(run.ident, values)
    if await stream.end("turn.ended", ended, settle_row):
        return status
    stored = await store.current_status(run.ident.turn_id)
    log.info("turn %s was already %s; keeping it", run.ident.turn_id, stored)
    return stored
