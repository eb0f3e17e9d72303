"""A live turn's events: assigned a sequence number, kept in memory for followers, written in batches.

Followers read the in-memory log by cursor, so a slow reader never slows the turn and needs no
buffer of its own; the writer batches rows (one statement per flush) so a token stream does not cost
one database round trip per token.

Event ids are reserved before they are shown. A follower only ever gets frames up to the turn's
*durable bound*: the highest seq either stored or below the turn's stored `seq_ceiling`. The
ceiling is raised `SEQ_BLOCK` ids at a time by the writes the turn makes anyway (the raise rides
in the flush's statement, app/runtime/store/batch.py), asked for half a block ahead; a stream that
reaches its bound asks for a write at once. So if the process dies, a run that continues the turn
numbers its events above the ceiling and no client ever sees one id for two different events.

Every write is fenced by its run (`Fence`, app/runtime/store/batch.py): once another replica has claimed
the turn (it took this one for dead), a write stores nothing of it and says so; the run then stops
where it is (`TakenOver`), writing nothing more, and its followers are told to reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy import Table

from app.core.sql import Sql
from app.models.base import utcnow
from app.runtime.port.events import EventBody, Followed, LoggedEvent, Reconnect, TurnEnded, stamp
from app.runtime.store.batch import (
    CEILINGS,
    EVENTS,
    Fence,
    Settle,
    StagedRow,
    Written,
    ceiling_row,
    write_rows,
)
from app.runtime.store.status import SEQ_BLOCK

log = logging.getLogger(__name__)
FLUSH_INTERVAL_SECONDS = 0.2
"""How long rows wait to share a write. Followers in this process never wait for it (they read the
in-memory log); it bounds what a crash of the process can lose, and the delay seen by followers of
this turn on other replicas. Tool calls, approvals and the turn's end are written at once."""
RECONNECT_MS = 1000
"""The `retry:` a follower of a handed-over run gets: another replica continues the turn at once."""
ABANDON = "abandon"
"""The cancel message of a run whose turn another replica took over (the fence): it writes nothing more."""


def taken_over() -> asyncio.CancelledError:
    """What a write of a run that lost its turn raises in its caller: a stop (`ABANDON`), which no
    runtime mistakes for a failed step; the run then ends without settling (app/runtime/runner.py)."""
    return asyncio.CancelledError(ABANDON)


class BatchFlusher:
    """Group commit: every `interval`, one write for what every turn of this process has staged.

    A turn that streams for seconds under load would otherwise write every `interval` on its own:
    with 50 turns in flight that is 250 statements and commits a second instead of 5. Each writer's
    lock is held while its rows are being written, so its own flushes and its last write (the settle)
    wait and stay in order. If the shared write fails, each turn's rows are written alone, so one bad
    row holds back only its own turn.
    """

    def __init__(self, sql: Sql, *, interval: float = FLUSH_INTERVAL_SECONDS) -> None:
        self._sql = sql
        self._interval = interval
        self._pending: dict[TurnWriter, None] = {}
        self._task: asyncio.Task[None] | None = None

    def want(self, writer: TurnWriter) -> None:
        self._pending[writer] = None
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    def forget(self, writer: TurnWriter) -> None:
        self._pending.pop(writer, None)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while self._pending:
            await asyncio.sleep(self._interval)
            await asyncio.shield(self.write_pending())

    async def write_pending(self) -> None:
        """Write the rows of every pending writer that is not writing on its own right now."""
        writers = [w for w in self._pending if not w.writing]
        for writer in writers:
            self.forget(writer)
            await writer.lock.acquire()
        try:
            batches = [(writer, writer.take()) for writer in writers]
            rows = [row for _, batch in batches for row in batch]
            if not rows:
                return
            fences = [fence for writer, _ in batches if (fence := writer.fence) is not None]
            try:
                written = await write_rows(self._sql, rows, fences=fences)
            except Exception:
                log.warning("shared flush failed; writing each turn's rows alone", exc_info=True)
                for writer, batch in batches:
                    await self._write_alone(writer, batch)
            else:
                for writer, batch in batches:
                    writer.stored(batch, written)
        finally:
            for writer in writers:
                writer.lock.release()

    async def _write_alone(self, writer: TurnWriter, batch: list[StagedRow]) -> None:
        try:
            written = await write_rows(self._sql, batch, fences=writer.fences)
        except Exception:
            log.exception("turn flush failed; retrying at the next flush")
            writer.put_back(batch)
            self.want(writer)
        else:
            writer.stored(batch, written)


class TurnWriter:
    """Rows a turn produces (events, messages, usage, receipts), written together in batches.

    Each write is one statement on PostgreSQL (app/runtime/store/batch.py), a transaction elsewhere. Writes run
    one at a time under a lock and take rows in the order they were staged, so message ids keep
    conversation order. Between explicit writes, the `BatchFlusher` (shared by the turns of a process)
    writes what was staged.
    """

    def __init__(self, sql: Sql, flusher: BatchFlusher | None = None, *, runner_id: uuid.UUID | None = None) -> None:
        self._sql = sql
        self._flusher = flusher or BatchFlusher(sql)
        self._rows: list[StagedRow] = []
        self.lock = asyncio.Lock()
        self.runner_id = runner_id
        """The process whose run this is: rows are stored (a ceiling raised) only while the turn is still its own."""
        self.turn_id: uuid.UUID | None = None
        """The turn whose rows these are (set by its `TurnStream`): with `runner_id`, the write's fence."""
        self.taken_over = False
        """A write found the turn claimed by another runner: nothing more is written."""
        self.on_taken_over: Callable[[], None] | None = None
        self._ceiling: dict[str, Any] | None = None
        self._closed = False
        self._soon: asyncio.Task[None] | None = None
        self.on_durable: Callable[[int], None] | None = None
        """Told the turn's new durable bound after each write that raised it (see `stored`)."""

    @property
    def writing(self) -> bool:
        return self.lock.locked()

    @property
    def fence(self) -> Fence | None:
        return None if self.runner_id is None or self.turn_id is None else Fence(self.turn_id, self.runner_id)

    @property
    def fences(self) -> list[Fence]:
        fence = self.fence
        return [] if fence is None else [fence]

    def stage(self, table: Table, row: dict[str, Any]) -> None:
        if self.taken_over:
            return
        self._rows.append((table, row))
        self._flusher.want(self)

    def reserve(self, turn_id: uuid.UUID, tenant_id: str, ceiling: int, *, now: bool) -> None:
        """Carry a raise of the turn's `seq_ceiling` to `ceiling` with the next write (`now`: write at once)."""
        self._ceiling = ceiling_row(turn_id, tenant_id, self.runner_id, ceiling)
        if now:
            self.write_soon()
        else:
            self._flusher.want(self)

    def write_soon(self) -> None:
        """A write now, not at the next batch: the stream's followers wait for it."""
        if self._closed or (self._soon is not None and not self._soon.done()):
            return
        self._soon = asyncio.create_task(self._write_soon())

    async def _write_soon(self) -> None:
        try:
            await self.flush()
        except Exception:
            log.warning("urgent turn flush failed; the batch retries it", exc_info=True)
            self._flusher.want(self)

    def take(self) -> list[StagedRow]:
        rows, self._rows = self._rows, []
        if self._ceiling is not None:
            rows.append((CEILINGS, self._ceiling))
            self._ceiling = None
        return rows

    def put_back(self, rows: list[StagedRow]) -> None:
        ceilings = [row for table, row in rows if table is CEILINGS]
        self._rows = [staged for staged in rows if staged[0] is not CEILINGS] + self._rows
        if ceilings and self._ceiling is None:
            self._ceiling = ceilings[-1]

    def stored(self, rows: list[StagedRow], written: Written) -> None:
        """After a write of `rows`: the highest seq that is now durable (stored, or below a raised ceiling),
        or, if the write found the turn taken by another runner, the run's stop."""
        if self.turn_id is not None and self.turn_id in written.taken:
            self._lost()
            return
        if self.on_durable is None:
            return
        bound = max((row["seq"] for table, row in rows if table is EVENTS), default=0)
        for table, row in rows:
            if table is CEILINGS and row["turn_id"] in written.raised:
                bound = max(bound, row["seq_ceiling"])
        if bound:
            self.on_durable(bound)

    async def flush(self) -> None:
        """Write everything staged so far, now.

        The write is shielded: a caller cancelled mid-commit must not leave the outcome unknown,
        or the rows would be written twice. A run that lost its turn gets its stop (`taken_over()`).
        """
        await asyncio.shield(self._locked_write(None))
        if self.taken_over:
            raise taken_over()

    async def close(self, settle: Settle | None = None, final: StagedRow | None = None) -> bool:
        """Stop batching and write the rest with `settle` atomically; `final` only if it settled.

        A pending ceiling raise is dropped: the settle updates the same turn row (and the run shows
        nothing more once its rows are stored).
        """
        self._flusher.forget(self)
        self._closed = True
        self._ceiling = None
        if settle is not None and self.runner_id is not None:
            settle = dataclasses.replace(settle, runner_id=self.runner_id)
        return await asyncio.shield(self._locked_write(settle, final))

    def abandon(self) -> None:
        """Stop batching and drop what is staged: another runner continues the turn from what is stored."""
        self._flusher.forget(self)
        self._closed = True
        self._ceiling = None
        self._rows.clear()

    def _lost(self) -> None:
        if self.taken_over:
            return
        log.warning("turn %s was claimed by another replica; its run here stops and stores nothing more", self.turn_id)
        self.taken_over = True
        self.abandon()
        if self.on_taken_over is not None:
            self.on_taken_over()

    async def _locked_write(self, settle: Settle | None, final: StagedRow | None = None) -> bool:
        async with self.lock:
            if self.taken_over:
                return False
            rows = self.take()
            if not rows and settle is None:
                return True
            try:
                written = await write_rows(self._sql, rows, settle, final, self.fences)
            except Exception:
                self.put_back(rows)
                raise
            self.stored(rows, written)
            return written.settled and not self.taken_over


class TurnStream:
    """The ordered events of one run of a turn (a resumed turn continues the sequence)."""

    def __init__(
        self, *, turn_id: uuid.UUID, tenant_id: str, last_seq: int, writer: TurnWriter, ceiling: int = 0
    ) -> None:
        """`ceiling`: the turn's stored `seq_ceiling` when the run starts (what its start reserved)."""
        self.turn_id = turn_id
        self.tenant_id = tenant_id
        self.first_seq = last_seq + 1
        self._turn_key = str(turn_id)
        self._seq = last_seq
        self._events: list[LoggedEvent] = []
        self._writer = writer
        self._changed = asyncio.Event()
        self.done = False
        self.handed_over = False
        """The run stopped without `turn.ended` (handed over, or taken over): followers are told to reconnect."""
        self._durable = max(ceiling, last_seq)
        """Frames up to this seq may be shown: stored, or below a stored ceiling."""
        self._asked = self._durable
        """The highest ceiling asked for so far."""
        self._hurried = False
        writer.on_durable = self._durable_to
        writer.turn_id = turn_id
        writer.on_taken_over = self._taken_over
        self.on_taken_over: Callable[[], None] | None = None
        """Told when a write found the turn claimed by another runner (the manager stops the run)."""

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def durable_seq(self) -> int:
        return self._durable

    def emit(self, event: EventBody) -> int:
        seq, row, logged = self._next(event)
        self._writer.stage(EVENTS, row)
        self._events.append(logged)
        if seq > self._asked - SEQ_BLOCK // 2:
            self._asked = seq + SEQ_BLOCK
            self._writer.reserve(self.turn_id, self.tenant_id, self._asked, now=seq > self._durable)
            self._hurried = seq > self._durable
        elif seq > self._durable and not self._hurried:
            self._hurried = True
            self._writer.write_soon()
        if seq <= self._durable:
            self._wake()
        return seq

    def _durable_to(self, bound: int) -> None:
        if bound > self._durable:
            self._durable = bound
            self._hurried = False
            self._wake()

    def stage(self, table: Table, row: dict[str, Any]) -> None:
        self._writer.stage(table, row)

    async def flush(self) -> None:
        await self._writer.flush()

    async def end(self, event: TurnEnded, settle: Settle) -> bool:
        """Settle the turn and store `turn.ended` in one transaction, before any follower sees it.

        If `settle` finds the turn already settled elsewhere (a cancel), the event is dropped.
        """
        seq, row, logged = self._next(event)
        try:
            settled = await self._writer.close(settle, (EVENTS, row))
            if settled:
                self._events.append(logged)
                self._durable = seq
            return settled
        finally:
            self.done = True
            self._wake()

    async def hand_over(self, release: Settle) -> bool:
        """Store everything staged and release the turn (`release`) in one write, without `turn.ended`;
        True if released. Followers get a `retry:` and their stream ends."""
        try:
            released = await self._writer.close(release)
            self._durable = self._seq
            return released
        finally:
            self._stopped()

    def abandon(self) -> None:
        """Stop where the run is, writing nothing more (another replica continues the turn)."""
        self._writer.abandon()
        self._stopped()

    def _taken_over(self) -> None:
        self._stopped()
        if self.on_taken_over is not None:
            self.on_taken_over()

    def _stopped(self) -> None:
        self.handed_over = True
        self.done = True
        self._wake()

    def _next(self, event: EventBody) -> tuple[int, dict[str, Any], LoggedEvent]:
        self._seq += 1
        seq = self._seq
        text = stamp(self._turn_key, seq, event)
        row = {
            "turn_id": self.turn_id,
            "seq": seq,
            "tenant_id": self.tenant_id,
            "type": event.type,
            "data": text,
            "created_at": utcnow(),
        }
        return seq, row, LoggedEvent(seq, event.type, text)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after: int) -> AsyncIterator[Followed]:
        """Events with seq > `after` (at least `first_seq - 1`), live until the run is done; a
        `Reconnect` last if the run stopped without `turn.ended`.

        Events that arrived together come as one batch (the HTTP edge sends them as one chunk).
        """
        index = max(after - self.first_seq + 1, 0)
        while True:
            waiter = self._changed
            shown = min(len(self._events), self._durable - self.first_seq + 1)
            if index < shown:
                batch = self._events[index:shown]
                index += len(batch)
                yield batch
                continue
            if self.done:
                if self.handed_over:
                    yield Reconnect(RECONNECT_MS)
                return
            await waiter.wait()
