"""A live turn's events: assigned a sequence number, kept in memory for followers, written in batches.

Followers read the in-memory log by cursor, so a slow reader never slows the turn and needs no
buffer of its own; the writer batches rows (one multi-row INSERT per flush) so a token stream does
not cost one database round trip per token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sse import encode_frame
from app.models import TurnEvent
from app.models.base import utcnow
from app.turns.notify import notify

log = logging.getLogger(__name__)
FLUSH_INTERVAL_SECONDS = 0.05


class EventWriter:
    """Buffers event rows and flushes them in one INSERT per interval, in its own transactions."""

    def __init__(self, engine: AsyncEngine, *, interval: float = FLUSH_INTERVAL_SECONDS) -> None:
        self._engine = engine
        self._interval = interval
        self._rows: list[dict[str, Any]] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if self._task is None:
            self._task = asyncio.create_task(self._run())
        self._wake.set()

    async def flush(self) -> None:
        """Write everything buffered so far, now."""
        while self._rows:
            rows, self._rows = self._rows, []
            async with self._engine.begin() as conn:
                await conn.execute(insert(TurnEvent), rows)
                await notify(conn, rows[0]["turn_id"])

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()

    async def _run(self) -> None:
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            if not self._closing:
                await asyncio.sleep(self._interval)
            try:
                await self.flush()
            except Exception:
                log.exception("event flush failed; retrying at the next flush")
                await asyncio.sleep(self._interval)


class TurnStream:
    """The ordered events of one run of a turn (a resumed turn continues the sequence)."""

    def __init__(self, *, turn_id: uuid.UUID, tenant_id: str, last_seq: int, writer: EventWriter) -> None:
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

    def emit(self, event_type: str, data: dict[str, Any]) -> int:
        seq, frame = self._record(event_type, data)
        self._frames.append(frame)
        self._wake()
        return seq

    async def emit_final(self, event_type: str, data: dict[str, Any]) -> None:
        """The last event: stored before any follower sees it, then the stream is done."""
        _, frame = self._record(event_type, data)
        try:
            await self._writer.close()
        finally:
            self._frames.append(frame)
            self.done = True
            self._wake()

    def _record(self, event_type: str, data: dict[str, Any]) -> tuple[int, bytes]:
        self._seq += 1
        payload = {"turn_id": self._turn_key, "seq": self._seq, "type": event_type, **data}
        text = orjson.dumps(payload).decode()
        self._writer.add(
            {
                "turn_id": self.turn_id,
                "seq": self._seq,
                "tenant_id": self.tenant_id,
                "type": event_type,
                "data": text,
                "created_at": utcnow(),
            }
        )
        return self._seq, encode_frame(self._seq, event_type, text)

    async def flush(self) -> None:
        await self._writer.flush()

    async def finish(self) -> None:
        """Persist everything, then release followers: a follower seeing the end can replay it all."""
        try:
            await self._writer.close()
        finally:
            self.done = True
            self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after: int) -> AsyncIterator[bytes]:
        """Frames with seq > `after` (at least `first_seq - 1`), live until the run is done."""
        index = max(after - self.first_seq + 1, 0)
        while True:
            waiter = self._changed
            while index < len(self._frames):
                yield self._frames[index]
                index += 1
            if self.done:
                return
            await waiter.wait()
