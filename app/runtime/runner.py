"""Runs one run of a turn (a new turn or a resume) on a runtime and settles its outcome."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from app.core import tracing
from app.core.logs import bind, get_logger
from app.core.metrics import TURNS_ENDED
from app.models.base import utcnow
from app.runtime.port.events import EndStatus, TurnEnded, TurnResumed, TurnStarted
from app.runtime.port.journal import CountsItsLoops, Progress, TurnJournal, TurnRun, TurnRuntime, TurnServices
from app.runtime.store.turns import TurnStore, release_turn, settle_turn
from app.runtime.stream import ABANDON, TurnStream

log = logging.getLogger(__name__)
T = TypeVar("T")
INTERNAL_ERROR_MESSAGE = "the turn stopped on an unexpected error; the service log has it under this turn's id"
"""Never the exception's class or text (they may carry a key or a statement): the log line has them,
with the turn's and the request's ids."""
turn_log = get_logger("agent_runtime.turns")

HAND_OVER = "hand_over"
"""The cancel message of a run stopped because its process stops (not a user's cancel): its turn is
handed over to another replica, not settled."""
STOPPED_EARLY: tuple[EndStatus, ...] = ("loop_limit", "budget_exceeded", "cancelled")
"""Outcomes whose final output falls back to the model's latest text."""


async def execute(
    runtime: TurnRuntime,
    run: TurnRun,
    services: TurnServices,
    journal: TurnJournal,
    stream: TurnStream,
    store: TurnStore,
) -> str:
    """Run the turn to an outcome and record it; returns the turn's final status."""
    ident = run.ident
    bind(tenant_id=ident.tenant_id, session_id=str(ident.session_id), turn_id=str(ident.turn_id))
    with tracing.span("invoke_agent", agent_span_attributes(run)) as span:
        settled, error = await _execute(runtime, run, services, journal, stream, store)
        if span is not None:
            span.set_attribute("agent_runtime.turn.status", settled)
            if error is not None:
                tracing.set_error(span, str(error.get("code")), str(error.get("message") or ""))
    if error is not None and settled == "failed":
        turn_log.warning("turn failed", status=settled, error_code=error.get("code"))
    elif error is not None:
        turn_log.info("turn ended", status=settled, error_code=error.get("code"))
    return settled


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
    runtime: TurnRuntime,
    run: TurnRun,
    services: TurnServices,
    journal: TurnJournal,
    stream: TurnStream,
    store: TurnStore,
) -> tuple[str, dict[str, Any] | None]:
    """The run and its settle: the status the turn ended with, and its error if that outcome stood."""
    stream.emit(opening_event(run, runtime))
    last = Progress(
        loop_count=run.loop_count,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        last_text=run.last_text,
    )
    status: EndStatus
    error: dict[str, Any] | None
    try:
        async for progress in runtime.run(run, services, journal):
            last = progress
        status, error = _outcome(last)
    except asyncio.CancelledError as exc:
        if ABANDON in exc.args:
            stream.abandon()
            return "running", None
        if HAND_OVER in exc.args:
            released = await _despite_cancel(stream.hand_over(release_turn(run.ident)))
            return ("running" if released else await store.current_status(run.ident.tenant_id, run.ident.turn_id)), None
        last = _with_cancelled_call(last, journal)
        status, error = "cancelled", None
    except Exception:
        log.exception("turn %s failed", run.ident.turn_id)
        status, error = "failed", {"code": "internal_error", "message": INTERNAL_ERROR_MESSAGE}
    settled = await _despite_cancel(settle(store, stream, run, last, status, error))
    TURNS_ENDED.labels(status=settled).inc()
    return settled, error if settled == status else None


def opening_event(run: TurnRun, runtime: TurnRuntime | None = None) -> TurnStarted | TurnResumed:
    """`turn.resumed` opens a run that continues a lost one (so a reconnected stream reads as one run);
    `turn.started` any other (a new turn, or an approval's resume)."""
    if run.continued is not None:
        return TurnResumed(
            reason=run.continued.reason,
            from_loop=runtime.continues_at(run) if isinstance(runtime, CountsItsLoops) else run.loop_count,
            last_durable_seq=run.continued.last_durable_seq,
        )
    return TurnStarted(
        session_id=str(run.ident.session_id),
        agent_id=str(run.ident.agent_id),
        agent_version=run.agent_version,
        resumed_by=str(run.resumed_by) if run.resumed_by else None,
    )


async def _despite_cancel(settling: Coroutine[Any, Any, T]) -> T:
    """Run the settlement to its end even if cancelled again (a second cancel, a shutdown).

    The outcome is decided by now; cut short, the turn would stay `running` and its stream would
    end without `turn.ended`.
    """
    task = asyncio.ensure_future(settling)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    return task.result()


def _with_cancelled_call(progress: Progress, journal: TurnJournal) -> Progress:
    """A model call cut by the cancel gave no reply, so no progress counted it: its usage still counts."""
    usage = journal.cancelled_usage
    if usage is None:
        return progress
    return dataclasses.replace(
        progress,
        input_tokens=progress.input_tokens + usage.input_tokens,
        output_tokens=progress.output_tokens + usage.output_tokens,
    )


def _outcome(progress: Progress) -> tuple[EndStatus, dict[str, Any] | None]:
    status = progress.status or "failed"
    error = progress.error
    if status == "failed" and error is None:
        error = {"code": "internal_error", "message": "the loop stopped without an outcome"}
    return status, error


async def settle(
    store: TurnStore,
    stream: TurnStream,
    run: TurnRun,
    progress: Progress,
    status: EndStatus,
    error: dict[str, Any] | None,
) -> str:
    final_output = progress.final_output if status != "failed" else None
    if status in STOPPED_EARLY and final_output is None:
        final_output = progress.last_text or None
    output = progress.output if status == "completed" else None
    ended = TurnEnded.of(
        status,
        final_output=final_output,
        output=output,
        input_tokens=progress.input_tokens,
        output_tokens=progress.output_tokens,
        loop_count=progress.loop_count,
        error=error,
    )
    values: dict[str, Any] = {
        "status": status,
        "final_output": final_output,
        "output": output,
        "error": error,
        "input_tokens": progress.input_tokens,
        "output_tokens": progress.output_tokens,
        "loop_count": progress.loop_count,
        "last_seq": stream.last_seq + 1,
    }
    if status != "interrupted":
        values["ended_at"] = utcnow()
    if await stream.end(ended, settle_turn(run.ident, values)):
        return status
    stored = await store.current_status(run.ident.tenant_id, run.ident.turn_id)
    log.info("turn %s was already %s; keeping it", run.ident.turn_id, stored)
    return stored
