"""Cross-replica wake-ups: every write of events NOTIFYs (in the write's own statement, see
app/runtime/store/batch.py), and followers of turns run elsewhere LISTEN.

A follower whose turn runs in another process replays from `turn_events`; this only tells it
when to look again, so a lost notification costs at most one poll interval, never an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.sql import asyncpg_dsn

log = logging.getLogger(__name__)
CHANNEL = "agent_runtime_turn_events"
CANCEL_CHANNEL = "agent_runtime_turn_cancel"
"""Asks whichever replica runs a turn to cancel it (see TurnService.cancel)."""
SEND_CANCEL = text(f"SELECT pg_notify('{CANCEL_CHANNEL}', :turn_id)")


SEND_EVENTS = text(f"SELECT pg_notify('{CHANNEL}', :turn_id)")


async def notify_followers(conn: AsyncConnection, turn_id: uuid.UUID) -> None:
    """New events of `turn_id` (sent at commit). The turn's writer sends its own in its write statement."""
    await conn.execute(SEND_EVENTS, {"turn_id": str(turn_id)})


async def request_cancel(engine: AsyncEngine, turn_id: uuid.UUID) -> None:
    async with engine.connect() as conn:
        await conn.execute(SEND_CANCEL, {"turn_id": str(turn_id)})


class EventListener:
    """One LISTEN connection per process; `wait(turn_id, timeout)` returns early on a notification."""

    def __init__(self, url: URL, *, on_cancel: Callable[[uuid.UUID], None] | None = None) -> None:
        self._dsn = asyncpg_dsn(url)
        self._conn: asyncpg.Connection | None = None
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self.on_cancel = on_cancel

    async def start(self) -> None:
        try:
            self._conn = await asyncpg.connect(self._dsn)
            await self._conn.add_listener(CHANNEL, self._on_notify)
            await self._conn.add_listener(CANCEL_CHANNEL, self._on_cancel)
        except (OSError, asyncpg.PostgresError) as exc:
            log.warning("LISTEN unavailable (%s); followers of remote turns poll", type(exc).__name__)
            self._conn = None

    async def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
            self._conn = None

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        for event in self._waiters.get(payload, ()):
            event.set()

    def _on_cancel(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if self.on_cancel is not None:
            with contextlib.suppress(ValueError):
                self.on_cancel(uuid.UUID(payload))

    async def wait(self, turn_id: uuid.UUID, timeout: float) -> bool:
        """True when a notification for the turn arrived, False when `timeout` passed first."""
        key = str(turn_id)
        event = asyncio.Event()
        self._waiters[key].add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._waiters[key].discard(event)
            if not self._waiters[key]:
                del self._waiters[key]
