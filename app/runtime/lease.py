"""Which process runs which turn, and noticing within seconds that a process is gone.

Every process registers in `runners` and heartbeats every `HEARTBEAT_SECONDS`; on PostgreSQL it also
holds, for its whole life, a session-level advisory lock keyed by its runner id on a connection of
its own (re-taken at the next beat if that connection drops). The server frees that lock the moment
the connection dies, whatever killed the process. A sweep every `SWEEP_SECONDS` on every replica
finds the `running` turns of other runners that are dead:

- its lock is free AND its heartbeat missed about two beats (`STALE_SECONDS`): a SIGKILL, an OOM,
  a lost host — noticed in a few seconds. The AND keeps a live replica whose lock connection
  blipped (it heartbeats, and re-locks at its next beat) from being robbed;
- OR its heartbeat is older than `LEASE_SECONDS`: a wedged process, or SQLite (no advisory locks);
- or the turn has no runner at all: a draining replica handed it over (`turns.handed_over`).

Each orphan is claimed by one conditional UPDATE (`CLAIM`, app/runtime/store/claims.py), so
exactly one replica continues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.runtime.store.runners import LEASE_SECONDS, Orphan, RunnerStore, lock_alive, take_lock

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 2.0
SWEEP_SECONDS = 2.0
QUEUE_SWEEP_EVERY = 5
"""Stalled queues are looked at every fifth sweep (~10 s): they wait on a dead replica's enqueuer only."""
LOCK_CHECK_SECONDS = 2.0


class RunnerLease:
    def __init__(self, engine: AsyncEngine, sweep: Callable[[], Awaitable[int]]) -> None:
        self.runner_id = uuid.uuid4()
        self._url = engine.url
        self._runners = RunnerStore(engine, self.runner_id)
        self._postgresql = engine.dialect.name == "postgresql"
        self._sweep = sweep
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncpg.Connection | None = None
        self._locking = asyncio.Lock()
        """One check of the lock connection at a time (the beat's, or a caller's)."""

    @property
    def postgresql(self) -> bool:
        return self._postgresql

    async def start(self) -> None:
        log.info("this process runs turns as runner %s", self.runner_id)  # which pod a `turns.runner_id` is
        try:
            await self.hold_lock()
            await self.heartbeat()
        except (OSError, SQLAlchemyError, asyncpg.PostgresError) as exc:
            log.warning("runner registration failed (%s); retrying with the heartbeat", type(exc).__name__)
        await self._sweep()
        self._task = asyncio.create_task(self._beat())

    async def stop(self, *, deregister: bool = True) -> None:
        """Stop beating and free the lock; `deregister` also removes the runner (a clean stop: other
        replicas need not wait for anything). Without it, the process looks exactly as if it had died."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if deregister:
            with contextlib.suppress(OSError, SQLAlchemyError):
                await self._runners.deregister()
        await self.release_lock()

    async def taken_over(self, turn_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        """Which of these turns (run here) another runner has claimed since: this process lost them."""
        if not turn_ids:
            return []
        return await self._runners.taken_over(turn_ids)

    async def hold_lock(self) -> bool:
        """PostgreSQL: make sure this process holds its advisory lock on its own connection; True if it does."""
        if not self._postgresql:
            return False
        async with self._locking:
            return await self._hold_lock()

    async def _hold_lock(self) -> bool:
        if self._lock is not None and not self._lock.is_closed():
            try:
                await lock_alive(self._lock, LOCK_CHECK_SECONDS)
                return True
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                log.warning("the runner's lock connection dropped; taking the lock again")
        await self.release_lock()
        conn = await take_lock(self._url, self.runner_id)
        if conn is None:  # the server has not noticed the old connection's end yet: next beat
            return False
        self._lock = conn
        return True

    async def release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None and not lock.is_closed():
            with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                await lock.close(timeout=LOCK_CHECK_SECONDS)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            try:
                await self.heartbeat()
                await self.hold_lock()
                await self._sweep()
            except (OSError, SQLAlchemyError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("heartbeat failed (%s)", type(exc).__name__)

    async def orphans(self, *, lease_seconds: float = LEASE_SECONDS) -> list[Orphan]:
        """Every orphaned turn, across tenants (app/runtime/store/runners.py)."""
        return await self._runners.orphans(lease_seconds=lease_seconds)

    async def heartbeat(self) -> None:
        await self._runners.heartbeat()
