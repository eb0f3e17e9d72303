"""Event ids are reserved before they are shown (`turns.seq_ceiling`), on both backends.

A follower never gets a frame above the turn's durable bound (stored, or below the stored ceiling);
the ceiling rides the flushes the turn makes anyway, and never moves for a run another runner took.
Writers share a BatchFlusher with an interval of an hour: only explicit and urgent writes happen.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import Sql
from app.models import Turn, TurnEvent
from app.providers.base import ToolCall
from app.runtime.port.journal import Continued, TurnIdentity, TurnRun
from app.runtime.runner import opening_event
from app.runtime.store.status import SEQ_BLOCK
from app.runtime.store.turns import TurnStore
from app.runtime.stream import BatchFlusher, TurnStream, TurnWriter
from app.tools.base import ToolResult
from app.turns.responses import sse_frames
from tests.turns.support import dispatch, raw_event, runner_of

FOLLOW_TIMEOUT_SECONDS = 30.0


async def ceiling_of(engine: AsyncEngine, turn_id: uuid.UUID) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(Turn.seq_ceiling).where(Turn.id == turn_id)))


async def set_ceiling(engine: AsyncEngine, turn_id: uuid.UUID, ceiling: int) -> None:
    async with engine.begin() as conn:
        await conn.execute(update(Turn).where(Turn.id == turn_id).values(seq_ceiling=ceiling))


async def stored_max(engine: AsyncEngine, turn_id: uuid.UUID) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(func.max(TurnEvent.seq)).where(TurnEvent.turn_id == turn_id)) or 0)


async def shown(stream: TurnStream, count: int) -> list[int]:
    """The ids of the first `count` frames a follower from the start gets."""
    ids: list[int] = []
    async with asyncio.timeout(FOLLOW_TIMEOUT_SECONDS):
        async for chunk in sse_frames(stream.follow(0)):
            ids += [int(line[4:]) for line in chunk.decode().splitlines() if line.startswith("id: ")]
            if len(ids) >= count:
                return ids
    return ids


def emit(stream: TurnStream, count: int) -> None:
    for i in range(count):
        stream.emit(raw_event("message.delta", {"text": f"w{i}"}))


async def test_frames_above_the_ceiling_wait_until_they_are_stored(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    ident = await make_turn()
    writer = TurnWriter(db, flusher, runner_id=await runner_of(engine, ident.turn_id))
    await set_ceiling(engine, ident.turn_id, 2)
    stream = TurnStream(turn_id=ident.turn_id, tenant_id=ident.tenant_id, last_seq=0, writer=writer, ceiling=2)
    follower = asyncio.create_task(shown(stream, 4))
    async with writer.lock:  # the urgent write the stream asks for cannot happen yet
        emit(stream, 4)
        for _ in range(20):
            await asyncio.sleep(0)
        assert stream.durable_seq == 2
        assert await stored_max(engine, ident.turn_id) == 0
        assert not follower.done()
    assert await follower == [1, 2, 3, 4], "the urgent write stored them and released them"
    assert await stored_max(engine, ident.turn_id) == 4
    reserved = await ceiling_of(engine, ident.turn_id)
    assert reserved > 4 + SEQ_BLOCK // 2, "the same write reserved the next block"
    assert stream.durable_seq == reserved
    await writer.close()


async def test_the_ceiling_is_raised_half_a_block_ahead_by_an_ordinary_flush(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    ident = await make_turn()
    writer = TurnWriter(db, flusher, runner_id=await runner_of(engine, ident.turn_id))
    await set_ceiling(engine, ident.turn_id, SEQ_BLOCK)
    stream = TurnStream(turn_id=ident.turn_id, tenant_id=ident.tenant_id, last_seq=0, writer=writer, ceiling=SEQ_BLOCK)
    emit(stream, SEQ_BLOCK // 2)
    await stream.flush()
    assert await ceiling_of(engine, ident.turn_id) == SEQ_BLOCK, "a flush far below the ceiling carries no raise"
    assert await shown(stream, SEQ_BLOCK // 2) == list(range(1, SEQ_BLOCK // 2 + 1))
    emit(stream, 1)
    await stream.flush()
    assert await ceiling_of(engine, ident.turn_id) == SEQ_BLOCK // 2 + 1 + SEQ_BLOCK
    assert stream.durable_seq == SEQ_BLOCK // 2 + 1 + SEQ_BLOCK
    await writer.close()


async def test_a_run_another_runner_took_over_cannot_raise_the_ceiling(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    ident = await make_turn()
    writer = TurnWriter(db, flusher, runner_id=uuid.uuid4())  # not the runner the turn names
    await set_ceiling(engine, ident.turn_id, 2)
    stream = TurnStream(turn_id=ident.turn_id, tenant_id=ident.tenant_id, last_seq=0, writer=writer, ceiling=2)
    emit(stream, 3)
    await flusher.write_pending()
    assert await ceiling_of(engine, ident.turn_id) == 2
    assert stream.durable_seq <= 3, "nothing beyond what it may have stored is shown"
    await writer.close()


async def test_the_ledger_names_a_dispatched_call_without_an_outcome(
    db: Sql, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    ident, other = await make_turn(), await make_turn()
    store = TurnStore(db)
    call = ToolCall(id="c1", name="calc", arguments={"expression": "2+2", "nested": {"a": [1, None]}})
    await dispatch(store, ident, key="k-" + ident.turn_id.hex, loop=0, call=call)
    key = "k-" + ident.turn_id.hex
    assert await store.ledger_dispatched(ident.tenant_id, key) == call.arguments
    assert await store.ledger_dispatched(other.tenant_id, key) is None, "another tenant's ledger is not read"
    assert await store.ledger_dispatched(ident.tenant_id, "k-unknown") is None
    await store.ledger_put(ident, key=key, loop=0, call=call, result=ToolResult("4"))
    assert await store.ledger_dispatched(ident.tenant_id, key) is None, "its outcome is stored now"


def test_a_continued_run_opens_with_turn_resumed() -> None:
    ident = TurnIdentity("t", uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
    run = TurnRun(ident=ident, agent_version=1, owner_sub="a", snapshot={}, input="hi", history=[], max_loops=4,
                  max_output_tokens=10, loop_count=2, continued=Continued("replica_lost", 41))  # fmt: skip
    assert run.continuing
    assert not run.resumed
    opening = opening_event(run)
    assert opening.model_dump() == {"type": "turn.resumed", "reason": "replica_lost", "from_loop": 2,
                                    "last_durable_seq": 41}  # fmt: skip
    fresh = opening_event(TurnRun(ident=ident, agent_version=1, owner_sub="a", snapshot={}, input="hi", history=[],
                                  max_loops=4, max_output_tokens=10))  # fmt: skip
    assert fresh.type == "turn.started"
