"""A live turn's events: assigned a sequence number, kept in memory for followers, written in batches.

Followers read the in-memory log by cursor, so a slow reader never slows the turn and needs no
buffer of its own; the writer batches rows (one statement per flush) so a token stream does not cost
one database round trip per token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import Table

from app.core.sql import Sql
from app.core.sse import encode_frame
from app.models.base import utcnow
from app.runtime.batch import EVENTS, Settle, StagedRow, write_rows
from app.runtime.events import EventBody, TurnEnded, stamp

log = logging.getLogger(__name__)
FLUSH_INTERVAL_SECONDS = 0.2
"""How long rows wait to share a write. Followers in this process never wait for it (they read the
in-memory log); it bounds what a crash of the process can lose, and the delay seen by followers of
this turn on other replicas. Tool calls, approvals and the turn's end are written at once."""


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
            try:
                await write_rows(self._sql, rows)
            except Exception:
                log.warning("shared flush failed; writing each turn's rows alone", exc_info=True)
                for writer, batch in batches:
                    await self._write_alone(writer, batch)
        finally:
            for writer in writers:
                writer.lock.release()

    async def _write_alone(self, writer: TurnWriter, batch: list[StagedRow]) -> None:
        try:
            await write_rows(self._sql, batch)
        except Exception:
            log.exception("turn flush failed; retrying at the next flush")
            writer.put_back(batch)
            self.want(writer)


class TurnWriter:
    """Rows a turn produces (events, messages, usage, receipts), written together in batches.

    Each write is one statement on PostgreSQL (app/runtime/batch.py), a transaction elsewhere. Writes run
    one at a time under a lock and take rows in the order they were staged, so message ids keep
    conversation order. Between explicit writes, the `BatchFlusher` (shared by the turns of a process)
    writes what was staged.
    """

    def __init__(self, sql: Sql, flusher: BatchFlusher | None = None) -> None:
        self._sql = sql
        self._flusher = flusher or BatchFlusher(sql)
        self._rows: list[StagedRow] = []
        self.lock = asyncio.Lock()

    @property
    def writing(self) -> bool:
        return self.lock.locked()

    def stage(self, table: Table, row: dict[str, Any]) -> None:
        self._rows.append((table, row))
        self._flusher.want(self)

    def take(self) -> list[StagedRow]:
        rows, self._rows = self._rows, []
        return rows

    def put_back(self, rows: list[StagedRow]) -> None:
        self._rows = rows + self._rows

    async def flush(self) -> None:
        """Write everything staged so far, now.

        The write is shielded: a caller cancelled mid-commit must not leave the outcome unknown,
        or the rows would be written twice.
        """
        await asyncio.shield(self._locked_write(None))

    async def close(self, settle: Settle | None = None, final: StagedRow | None = None) -> bool:
        """Stop batching and write the rest with `settle` atomically; `final` only if it settled."""
        self._flusher.forget(self)
        return await asyncio.shield(self._locked_write(settle, final))

    async def _locked_write(self, settle: Settle | None, final: StagedRow | None = None) -> bool:
        async with self.lock:
            rows = self.take()
            if not rows and settle is None:
                return True
            try:
                return await write_rows(self._sql, rows, settle, final)
            except Exception:
                self.put_back(rows)
                raise


class TurnStream:
    """The ordered events of one run of a turn (a resumed turn continues the sequence)."""

    def __init__(self, *, turn_id: uuid.UUID, tenant_id: str, last_seq: int, writer: TurnWriter) -> None:
        self.turn_id = turn_id
        self.tenant_id = tenant_id
        self.first_seq = last_seq + 1
        self._turn_key = str(turn_id)
        self._seq = last_seq
        self._frames: list[bytes] = []
        self._writer = writer
        self._changed = asyncio.Event()
        self.done = False

    @property
    def last_seq(self) -> int:
        return self._seq

    def emit(self, event: EventBody) -> int:
        seq, row, frame = self._next(event)
        self._writer.stage(EVENTS, row)
        self._frames.append(frame)
        self._wake()
        return seq

    def stage(self, table: Table, row: dict[str, Any]) -> None:
        self._writer.stage(table, row)

    async def flush(self) -> None:
        await self._writer.flush()

    async def end(self, event: TurnEnded, settle: Settle) -> bool:
        """Settle the turn and store `turn.ended` in one transaction, before any follower sees it.

        If `settle` finds the turn already settled elsewhere (a cancel), the event is dropped.
        """
        _, row, frame = self._next(event)
        try:
            settled = await self._writer.close(settle, (EVENTS, row))
            if settled:
                self._frames.append(frame)
            return settled
        finally:
            self.done = True
            self._wake()

    def _next(self, event: EventBody) -> tuple[int, dict[str, Any], bytes]:
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
        return seq, row, encode_frame(seq, event.type, text)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after: int) -> AsyncIterator[bytes]:
        """Frames with seq > `after` (at least `first_seq - 1`), live until the run is done.

        Frames that arrived together are sent as one chunk: fewer writes, same bytes.
        """
        index = max(after - self.first_seq + 1, 0)
        while True:
            waiter = self._changed
            if index < len(self._frames):
                chunk = self._frames[index:]
                index += len(chunk)
                yield chunk[0] if len(chunk) == 1 else b"".join(chunk)
            if self.done and index >= len(self._frames):
                return
            if index >= len(self._frames):
                await waiter.wait()
