"""The periodic session sweep: idle expiry (`SESSION_IDLE_TTL_SECONDS`), then retention (`RETENTION_DAYS`).

One replica at a time: on PostgreSQL every pass is a transaction that first takes a transaction-level
advisory lock with `pg_try_advisory_xact_lock`, so a replica that finds it taken skips the pass, and
a replica that dies mid-pass frees it with its connection. SQLite is the single-process default.
Every pass touches a bounded batch, so a table of millions of sessions costs many short passes,
never one long transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.files.store import FileStore
from app.models.base import utcnow
from app.runtime.port.events import EndStatus
from app.sessions.expiry import IdleTtl
from app.sessions.repository import SweepRepository, TurnKey
from app.settings import LifecycleSettings

log = logging.getLogger(__name__)
SWEEP_LOCK_KEY = 0x6172_5F73_7765_6570  # "ar_sweep"
"""The advisory lock that makes one replica at a time sweep."""

SESSION_EXPIRED = {
    "code": "session_expired",
    "message": "the session expired (idle past SESSION_IDLE_TTL_SECONDS) while this turn waited for approvals",
}
"""The error of an interrupted turn ended because its session expired."""

EndTurn = Callable[[TurnKey], Awaitable[bool]]


class EndsTurns(Protocol):
    """What the sweep needs of the turn engine: end a turn no task runs, with a closing event."""

    async def end_orphan(
        self, tenant_id: str, turn_id: uuid.UUID, *, status: EndStatus, error: dict[str, str] | None
    ) -> bool: ...


@dataclass(frozen=True, slots=True)
class SweepLimits:
    idle_ttl_seconds: int = 0
    retention_days: int = 0
    session_batch: int = 500
    """Sessions examined per expiry pass."""
    purge_sessions: int = 50
    """Sessions purged together."""
    purge_rows: int = 5000
    """Rows deleted per statement."""
    max_passes: int = 100
    """Passes per sweep; the rest waits for the next sweep."""

    @classmethod
    def of(cls, settings: LifecycleSettings) -> SweepLimits:
        return cls(idle_ttl_seconds=settings.session_idle_ttl_seconds, retention_days=settings.retention_days)


@dataclass(slots=True)
class SweepReport:
    expired: int = 0
    turns_ended: int = 0
    purged: int = 0
    rows_deleted: int = 0


def session_sweeper(
    limits: SweepLimits, engine: AsyncEngine, turns: EndsTurns, files: FileStore | None = None
) -> SessionSweeper:
    """The sweep; an expired session's interrupted turn ends `cancelled` (`session_expired`); a purged
    session's files go with it (their bytes too, when `FILE_STORE_DIR` keeps them on disk)."""

    async def end_turn(turn: TurnKey) -> bool:
        return await turns.end_orphan(turn.tenant_id, turn.turn_id, status="cancelled", error=SESSION_EXPIRED)

    return SessionSweeper(engine, limits, end_turn, files or FileStore(None))


class SessionSweeper:
    def __init__(self, engine: AsyncEngine, limits: SweepLimits, end_turn: EndTurn, files: FileStore) -> None:
        self._engine = engine
        self._files = files
        self._limits = limits
        self._end_turn = end_turn
        self._task: asyncio.Task[None] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self._limits.idle_ttl_seconds or self._limits.retention_days)

    def start(self, interval_seconds: float) -> None:
        if self.enabled:
            self._task = asyncio.create_task(self._loop(interval_seconds), name="session-sweeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self, interval_seconds: float) -> None:
        while True:
            try:
                await self.sweep()
            except (OSError, SQLAlchemyError) as exc:
                log.warning("session sweep failed (%s); retrying next time", type(exc).__name__)
            await asyncio.sleep(interval_seconds)

    async def sweep(self) -> SweepReport:
        report = SweepReport()
        if self._limits.idle_ttl_seconds:
            await self._expire(report)
        if self._limits.retention_days:
            await self._purge(report)
        if report.expired or report.purged:
            log.info(
                "session sweep: %d expired, %d interrupted turn(s) ended, %d purged (%d rows)",
                report.expired, report.turns_ended, report.purged, report.rows_deleted,
            )  # fmt: skip
        return report

    @asynccontextmanager
    async def _pass(self) -> AsyncIterator[SweepRepository | None]:
        """A transaction holding the sweep lock, or None if another replica sweeps right now."""
        async with self._engine.begin() as conn:
            sweep = SweepRepository(conn)
            if conn.dialect.name == "postgresql" and not await sweep.try_lock(SWEEP_LOCK_KEY):
                yield None
                return
            yield sweep

    async def _expire(self, report: SweepReport) -> None:
        limits = self._limits
        ttl, now = IdleTtl(limits.idle_ttl_seconds), utcnow()
        for _ in range(limits.max_passes):
            async with self._pass() as sweep:
                if sweep is None:
                    return
                expired = await sweep.expire_idle(ttl, now=now, batch=limits.session_batch)
                leftover = await sweep.interrupted_in_ended_sessions(limit=limits.session_batch)
            report.expired += len(expired.sessions)
            for turn in dict.fromkeys([*expired.interrupted_turns, *leftover]):
                report.turns_ended += int(await self._end_turn(turn))
            if expired.candidates < limits.session_batch:
                return

    async def _purge(self, report: SweepReport) -> None:
        limits = self._limits
        cutoff = utcnow() - timedelta(days=limits.retention_days)
        for _ in range(limits.max_passes):
            async with self._pass() as sweep:
                if sweep is None:
                    return
                sessions = await sweep.sessions_to_purge(cutoff=cutoff, batch=limits.purge_sessions)
            if not sessions or not await self._purge_sessions(sessions, report):
                return
            report.purged += len(sessions)
            if len(sessions) < limits.purge_sessions:
                return

    async def _purge_sessions(self, sessions: list[uuid.UUID], report: SweepReport) -> bool:
        """Delete the sessions' events, then their messages, a bounded chunk per statement."""
        rows = self._limits.purge_rows
        for delete_chunk in (SweepRepository.delete_events, SweepRepository.delete_messages):
            while True:
                async with self._pass() as sweep:
                    if sweep is None:
                        return False
                    deleted = await delete_chunk(sweep, sessions, rows=rows)
                report.rows_deleted += deleted
                if deleted < rows:
                    break
        async with self._pass() as sweep:
            if sweep is None:
                return False
            removed = await sweep.delete_files(sessions)
            await sweep.mark_purged(sessions)
        for file_id in removed:  # after the commit: a row never names bytes that are gone
            await self._files.remove(file_id)
        return True
