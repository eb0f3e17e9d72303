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

Each orphan is claimed by one conditional UPDATE (`claim_query`, app/runtime/continuation.py), so
exactly one replica continues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import asyncpg
from sqlalchemy import ColumnElement, Select, and_, delete, func, insert, literal_column, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import asyncpg_dsn
from app.models import Runner, Turn
from app.models.base import utcnow

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 2.0
SWEEP_SECONDS = 2.0
STALE_SECONDS = 5.0
"""A heartbeat this old missed two beats: with its lock free, the runner is gone."""
LEASE_SECONDS = 10.0
"""A heartbeat this old: the runner is gone whatever its lock says (and on SQLite, which has no lock)."""
QUEUE_SWEEP_EVERY = 5
"""Stalled queues are looked at every fifth sweep (~10 s): they wait on a dead replica's enqueuer only."""
LOCK_CHECK_SECONDS = 2.0
RUNNING: ColumnElement[str] = literal_column("'running'")
"""Written into the statement, not bound: a generic plan can then still use the partial index on running turns."""


def lock_key(runner_id: uuid.UUID) -> int:
    """The advisory lock of a runner: the first 8 bytes of its id, as PostgreSQL's signed bigint."""
    return int.from_bytes(runner_id.bytes[:8], "big", signed=True)


@dataclass(frozen=True, slots=True)
class Orphan:
    turn_id: uuid.UUID
    tenant_id: str
    runner_id: uuid.UUID | None
    """The dead runner (None: handed over); the claim requires the turn still names it."""
    handed_over: bool


def orphaned_turns(
    me: uuid.UUID, *, postgresql: bool, lease_seconds: float = LEASE_SECONDS
) -> Select[uuid.UUID, str, uuid.UUID | None, bool]:
    """Running turns of other runners that are dead (see the module's rule), through `ix_turns_running_runner`."""
    now = utcnow()
    heartbeat = Runner.heartbeat_at
    dead = or_(Turn.runner_id.is_(None), Runner.id.is_(None), heartbeat < now - timedelta(seconds=lease_seconds))
    if postgresql:
        lock_free = func.pg_try_advisory_xact_lock(Runner.lock_key)
        dead = or_(dead, and_(heartbeat < now - timedelta(seconds=STALE_SECONDS), lock_free.is_(True)))
    return (
        select(Turn.id, Turn.tenant_id, Turn.runner_id, Turn.handed_over)
        .outerjoin(Runner, Runner.id == Turn.runner_id)
        .where(Turn.status == RUNNING, Turn.runner_id.is_distinct_from(me), dead)
    )


class RunnerLease:
    def __init__(self, engine: AsyncEngine, sweep: Callable[[], Awaitable[int]]) -> None:
        self.runner_id = uuid.uuid4()
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
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
                async with self._engine.connect() as conn:
                    await conn.execute(delete(Runner).where(Runner.id == self.runner_id))
        await self.release_lock()

    async def taken_over(self, turn_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        """Which of these turns (run here) another runner has claimed since: this process lost them."""
        if not turn_ids:
            return []
        query = select(Turn.id).where(
            Turn.id.in_(turn_ids), Turn.status == "running", Turn.runner_id.is_distinct_from(self.runner_id)
        )
        async with self._engine.connect() as conn:
            return list(await conn.scalars(query))

    async def hold_lock(self) -> bool:
        """PostgreSQL: make sure this process holds its advisory lock on its own connection; True if it does."""
        if not self._postgresql:
            return False
        async with self._locking:
            return await self._hold_lock()

    async def _hold_lock(self) -> bool:
        if self._lock is not None and not self._lock.is_closed():
            try:
                async with asyncio.timeout(LOCK_CHECK_SECONDS):
                    await self._lock.execute("SELECT 1")
                return True
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                log.warning("the runner's lock connection dropped; taking the lock again")
        await self.release_lock()
        conn = await asyncpg.connect(asyncpg_dsn(self._engine.url))
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(self.runner_id)):
            await conn.close()  # the server has not noticed the old connection's end yet: next beat
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
        """Every orphaned turn, across tenants; the advisory locks are tried in this short transaction."""
        query = orphaned_turns(self.runner_id, postgresql=self._postgresql, lease_seconds=lease_seconds)
        async with self._engine.begin() as conn:
            return [Orphan(row.id, row.tenant_id, row.runner_id, row.handed_over) for row in await conn.execute(query)]

    async def heartbeat(self) -> None:
        async with self._engine.connect() as conn:
            moved = await conn.execute(update(Runner).where(Runner.id == self.runner_id).values(heartbeat_at=utcnow()))
            if not moved.rowcount:
                await conn.execute(
                    insert(Runner).values(
                        id=self.runner_id,
                        started_at=utcnow(),
                        heartbeat_at=utcnow(),
                        lock_key=lock_key(self.runner_id) if self._postgresql else None,
                    )
                )
