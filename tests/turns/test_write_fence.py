"""Every write of a run is fenced by the runner that runs it (PostgreSQL: SQLite serves one process).

A run whose turn another runner has claimed stores none of its turn's rows, and stops: an explicit
flush raises the run's stop (`ABANDON`), its followers are told to reconnect, and what it stages
later is dropped. The rows of other turns in the same shared write are stored as before. Writers
share the `flusher` of tests/turns/conftest.py, which writes only when a test asks.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import Sql
from app.models import Turn
from app.providers.base import ChatMessage, ToolCall
from app.runtime.port.journal import ModelUsage, TurnIdentity
from app.runtime.store.batch import LEDGER
from app.runtime.store.status import SEQ_BLOCK
from app.runtime.store.turns import MESSAGES, USAGE, ledger_row, message_row, usage_row
from app.runtime.stream import ABANDON, BatchFlusher, TurnStream, TurnWriter
from app.turns.responses import sse_frames
from tests.turns.support import POLL_TIMEOUT_SECONDS, raw_event, runner_of
from tests.turns.test_turn_writer import count, counts

pytestmark = pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
FOLLOW_TIMEOUT_SECONDS = 30.0


async def run_of(engine: AsyncEngine, db: Sql, flusher: BatchFlusher, ident: TurnIdentity) -> TurnStream:
    """The stream of the run that holds the turn (its writer is fenced by the turn's runner)."""
    writer = TurnWriter(db, flusher, runner_id=await runner_of(engine, ident.turn_id))
    return TurnStream(
        turn_id=ident.turn_id, tenant_id=ident.tenant_id, last_seq=0, writer=writer, ceiling=SEQ_BLOCK
    )  # fmt: skip


def stage_a_step(stream: TurnStream, ident: TurnIdentity) -> None:
    """What a model reply stages: its events, its message and its usage."""
    stream.emit(raw_event("message.delta", {"text": "late"}))
    stream.stage(MESSAGES, message_row(ident, ChatMessage(role="assistant", content="late")))
    stream.stage(USAGE, usage_row(ident, ModelUsage("m", 3, 4, "chat")))
    stream.emit(raw_event("message.completed", {"text": "late"}))


async def claim_for_another(engine: AsyncEngine, turn_id: uuid.UUID) -> None:
    async with engine.begin() as conn:
        await conn.execute(update(Turn).where(Turn.id == turn_id).values(runner_id=None, handed_over=True))


async def frames_of(stream: TurnStream) -> str:
    async with asyncio.timeout(FOLLOW_TIMEOUT_SECONDS):
        return "".join([chunk.decode() async for chunk in sse_frames(stream.follow(0))])


async def test_a_flush_of_a_run_that_lost_its_turn_stores_nothing_and_stops_the_run(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    ident = await make_turn()
    stream = await run_of(engine, db, flusher, ident)
    stage_a_step(stream, ident)
    await stream.flush()
    before = await counts(engine, ident.turn_id)
    follower = asyncio.create_task(frames_of(stream))
    await claim_for_another(engine, ident.turn_id)
    stage_a_step(stream, ident)

    with pytest.raises(asyncio.CancelledError) as stopped:
        await stream.flush()
    stage_a_step(stream, ident)
    await flusher.write_pending()

    assert stopped.value.args == (ABANDON,), "the run's stop, not a failure a runtime would report"
    assert await counts(engine, ident.turn_id) == before == {"turn_events": 2, "messages": 1, "usage": 1,
                                                             "policy_decisions": 0}  # fmt: skip
    assert stream.done
    assert stream.handed_over
    shown = await follower
    assert "\nretry: " in "\n" + shown, "its followers are told to reconnect"
    assert "event: turn.ended" not in shown


async def test_a_run_that_lost_its_turn_records_no_dispatch_and_stops_before_the_call_leaves(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    """A dispatch is the ledger row staged with the call's request and flushed (TurnRecorder.dispatched):
    fenced out, the row is not stored and the flush stops the run before it sends the call."""
    ident = await make_turn()
    stream = await run_of(engine, db, flusher, ident)
    call = ToolCall(id="call_1", name="echo", arguments={"text": "x"})
    await claim_for_another(engine, ident.turn_id)
    stream.stage(LEDGER, ledger_row(ident, key=f"k-{ident.turn_id.hex}", loop=0, call=call, result=None))

    with pytest.raises(asyncio.CancelledError) as stopped:
        await stream.flush()

    assert stopped.value.args == (ABANDON,)
    assert await count(engine, LEDGER, ident.turn_id) == 0


async def test_a_shared_flush_stores_the_turns_still_held_and_stops_only_the_lost_run(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    kept_ident, lost_ident = await make_turn(), await make_turn()
    kept, lost = await run_of(engine, db, flusher, kept_ident), await run_of(engine, db, flusher, lost_ident)
    told: list[uuid.UUID] = []
    lost.on_taken_over = lambda: told.append(lost_ident.turn_id)
    kept.on_taken_over = lambda: told.append(kept_ident.turn_id)
    await claim_for_another(engine, lost_ident.turn_id)
    stage_a_step(kept, kept_ident)
    stage_a_step(lost, lost_ident)

    await flusher.write_pending()

    assert await counts(engine, kept_ident.turn_id) == {"turn_events": 2, "messages": 1, "usage": 1,
                                                        "policy_decisions": 0}  # fmt: skip
    assert await counts(engine, lost_ident.turn_id) == {"turn_events": 0, "messages": 0, "usage": 0,
                                                        "policy_decisions": 0}  # fmt: skip
    assert told == [lost_ident.turn_id], "the lost run's owner is told to stop it"
    assert lost.handed_over
    assert not kept.done
    assert kept.durable_seq >= 2


async def test_a_claim_that_commits_while_a_flush_waits_for_the_turn_keeps_the_flush_out(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    """The fence share-locks the turn: a claim in flight makes the write wait, then re-read the turn."""
    ident = await make_turn()
    stream = await run_of(engine, db, flusher, ident)
    stage_a_step(stream, ident)
    async with engine.connect() as claimer:
        await claimer.execute(update(Turn).where(Turn.id == ident.turn_id).values(runner_id=None))
        claimer_pid = await claimer.scalar(text("SELECT pg_backend_pid()"))
        flush = asyncio.create_task(stream.flush())
        await blocked_by(engine, claimer_pid)
        assert not flush.done()
        await claimer.commit()
    with pytest.raises(asyncio.CancelledError):
        await flush

    assert await counts(engine, ident.turn_id) == {"turn_events": 0, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip
    assert stream.handed_over


async def blocked_by(engine: AsyncEngine, pid: int) -> None:
    """Until some backend waits for a lock `pid` holds."""
    query = text("SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))")
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            async with engine.connect() as conn:
                if await conn.scalar(query, {"pid": pid}):
                    return
            await asyncio.sleep(0.02)
