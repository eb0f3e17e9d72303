"""The `runners` table and the reads of a runner's liveness: the heartbeat row, the advisory lock
held on a connection of the runner's own, and the sweep's query for turns whose runner is gone
(see app/runtime/lease.py for the rule)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta

import asyncpg
from sqlalchemy import ColumnElement, Select, and_, delete, func, insert, literal_column, or_, select, update
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import asyncpg_dsn
from app.models import Runner, Turn
from app.models.base import utcnow

STALE_SECONDS = 5.0
"""A heartbeat this old missed two beats: with its lock free, the runner is gone."""
LEASE_SECONDS = 10.0
"""A heartbeat this old: the runner is gone whatever its lock says (and on SQLite, which has no lock)."""
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


class RunnerStore:
    """The statements of one runner (`runner_id`) on `runners` and `turns`, autocommit."""

    def __init__(self, engine: AsyncEngine, runner_id: uuid.UUID) -> None:
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._postgresql = engine.dialect.name == "postgresql"
        self.runner_id = runner_id

    async def heartbeat(self) -> None:
        """Beat, registering the runner first if its row is gone (or never was)."""
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

    async def deregister(self) -> None:
        async with self._engine.connect() as conn:
            await conn.execute(delete(Runner).where(Runner.id == self.runner_id))

    async def taken_over(self, turn_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        """Which of these turns (run here) another runner has claimed since."""
        query = select(Turn.id).where(
            Turn.id.in_(turn_ids), Turn.status == "running", Turn.runner_id.is_distinct_from(self.runner_id)
        )
        async with self._engine.connect() as conn:
            return list(await conn.scalars(query))

    async def orphans(self, *, lease_seconds: float) -> list[Orphan]:
        """Every orphaned turn, across tenants; the advisory locks are tried in this short transaction."""
        query = orphaned_turns(self.runner_id, postgresql=self._postgresql, lease_seconds=lease_seconds)
        async with self._engine.begin() as conn:
            return [Orphan(row.id, row.tenant_id, row.runner_id, row.handed_over) for row in await conn.execute(query)]


async def take_lock(url: URL, runner_id: uuid.UUID) -> asyncpg.Connection | None:
    """A connection of its own holding the runner's advisory lock; None while the server still holds
    it for an old connection (not yet noticed as gone)."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(runner_id)):
        await conn.close()
        return None
    return conn


async def lock_alive(conn: asyncpg.Connection, timeout: float) -> None:
    """Raises if the lock's connection is gone or does not answer within `timeout`."""
    async with asyncio.timeout(timeout):
        await conn.execute("SELECT 1")
