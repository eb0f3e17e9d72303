"""Which process runs which turn, so replicas recover only the turns of processes that died.

Every process registers in `runners` and refreshes its heartbeat; a turn records the runner that
runs it. A `running` turn whose runner is gone or silent for longer than the lease is orphaned:
any replica's sweep ends it with `server_restarted`, and no replica ends another's live turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta

from sqlalchemy import Select, delete, insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Runner, Turn
from app.models.base import utcnow

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 10.0
LEASE_SECONDS = 45.0


def orphaned_turns(*, lease_seconds: float = LEASE_SECONDS) -> Select[uuid.UUID, str]:
    """Running turns (id, tenant) with no runner, or a runner whose heartbeat is older than the lease."""
    alive = select(Runner.id).where(Runner.heartbeat_at > utcnow() - timedelta(seconds=lease_seconds))
    orphaned = or_(Turn.runner_id.is_(None), Turn.runner_id.not_in(alive))
    return select(Turn.id, Turn.tenant_id).where(Turn.status == "running", orphaned)


class RunnerLease:
    def __init__(self, engine: AsyncEngine, sweep: Callable[[], Awaitable[int]]) -> None:
        self.runner_id = uuid.uuid4()
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._sweep = sweep
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            async with self._engine.connect() as conn:
                await conn.execute(insert(Runner).values(id=self.runner_id, started_at=utcnow(), heartbeat_at=utcnow()))
        except (OSError, SQLAlchemyError) as exc:
            log.warning("runner registration failed (%s); retrying with the heartbeat", type(exc).__name__)
        await self._sweep()
        self._task = asyncio.create_task(self._beat())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(OSError, SQLAlchemyError):
            async with self._engine.connect() as conn:
                await conn.execute(delete(Runner).where(Runner.id == self.runner_id))

    async def _beat(self) -> None:
        beats = 0
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            beats += 1
            try:
                await self.heartbeat()
                if beats % 3 == 0:
                    await self._sweep()
            except (OSError, SQLAlchemyError) as exc:
                log.warning("heartbeat failed (%s)", type(exc).__name__)

    async def orphans(self) -> list[tuple[uuid.UUID, str]]:
        """(turn id, tenant id) of every orphaned turn, across tenants: the sweep ends them all."""
        async with self._engine.connect() as conn:
            return [(row.id, row.tenant_id) for row in await conn.execute(orphaned_turns())]

    async def heartbeat(self) -> None:
        async with self._engine.connect() as conn:
            moved = await conn.execute(update(Runner).where(Runner.id == self.runner_id).values(heartbeat_at=utcnow()))
            if not moved.rowcount:
                await conn.execute(insert(Runner).values(id=self.runner_id, started_at=utcnow(), heartbeat_at=utcnow()))
