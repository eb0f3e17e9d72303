"""Fires due schedules, each tick once across replicas, each firing's turn exactly once.

A pass claims the due schedules (row locks, `SKIP LOCKED` on PostgreSQL, so replicas share the work
without waiting on each other) and, in the same transaction, records one firing per schedule for
the tick that was due and moves the schedule to its next tick after *now*: ticks missed while the
service was down fire once, not once each. The firing's session and turn ids are chosen then. Each
firing is started under its own row lock; a start that finds its turn already stored (the replica
died before marking it) only marks it, so a retried start never runs a second turn. A firing that
cannot start (closed session, a ceiling) keeps the reason in `error`; a schedule whose agent was
archived is turned off (`disabled_reason`) before its next tick is claimed.

A firing in a session of its own schedule (`session: <id>`) that is busy is queued behind the active
turn (`multitask_strategy: enqueue`), never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import SQLAlchemyError

from app.auth.principal import Principal
from app.container import AppState
from app.core.db import unit_of_work
from app.errors import AppError
from app.models import Schedule, ScheduleFiring
from app.models.base import utcnow
from app.schedules import cron
from app.schedules.repository import DueSchedules
from app.sessions.schemas import SessionCreate
from app.sessions.service import new_session
from app.turns.schemas import TurnCreate
from app.turns.service import TurnService

log = logging.getLogger(__name__)
CLAIM_BATCH = 20


@dataclass(frozen=True, slots=True)
class _Plan:
    """What starting a firing needs of its schedule, read while the schedule's row was loaded."""

    id: uuid.UUID
    tenant_id: str
    owner_sub: str
    agent_id: uuid.UUID
    session_id: uuid.UUID | None
    input: str

    @classmethod
    def of(cls, row: Schedule) -> _Plan:
        return cls(row.id, row.tenant_id, row.owner_sub, row.agent_id, row.session_id, row.input)


class ScheduleWorker:
    def __init__(self, state: AppState, *, poll_seconds: float, clock: Callable[[], datetime] = utcnow) -> None:
        self.state = state
        self.poll_seconds = poll_seconds
        self.clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="schedules")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except (OSError, SQLAlchemyError) as exc:
                log.warning("schedule pass skipped (%s)", type(exc).__name__)
            await asyncio.sleep(self.poll_seconds)

    async def run_once(self, now: datetime | None = None) -> list[uuid.UUID]:
        """Claim what is due at `now`, then start every firing not started yet; the firings' ids."""
        now = now or self.clock()
        await self._claim(now)
        async with unit_of_work(self.state.session_factory) as db:
            waiting = [
                (firing.id, _Plan.of(schedule))
                for firing, schedule in await DueSchedules(db).unstarted(now, limit=CLAIM_BATCH * 5)
            ]
        return [firing_id for firing_id, plan in waiting if await self._start(firing_id, plan)]

    async def _claim(self, now: datetime) -> None:
        async with unit_of_work(self.state.session_factory) as db:
            due = DueSchedules(db)
            await due.disable_orphaned()
            for schedule in await due.claim(now, limit=CLAIM_BATCH):
                due.add_firing(
                    ScheduleFiring(
                        id=uuid.uuid4(),
                        tenant_id=schedule.tenant_id,
                        schedule_id=schedule.id,
                        scheduled_for=schedule.next_fire_at,
                        session_id=schedule.session_id or uuid.uuid4(),
                        turn_id=uuid.uuid4(),
                        started=False,
                    )  # fmt: skip
                )
                schedule.last_fired_at = now
                schedule.next_fire_at = cron.next_tick(
                    schedule.cron, schedule.timezone, max(now, schedule.next_fire_at)
                )

    async def _start(self, firing_id: uuid.UUID, schedule: _Plan) -> bool:
        """Start one firing's turn under the firing's row lock; False if another replica has it."""
        async with unit_of_work(self.state.session_factory) as db:
            due = DueSchedules(db)
            firing = await due.lock_unstarted(firing_id)
            if firing is None:
                return False
            if not await due.turn_stored(firing):
                firing.error = await self._launch(firing, schedule)
            firing.started = True
        return True

    async def _launch(self, firing: ScheduleFiring, schedule: _Plan) -> str | None:
        owner = Principal(sub=schedule.owner_sub, tenant_id=schedule.tenant_id)
        try:
            if schedule.session_id is None:
                await new_session(
                    self.state, owner, SessionCreate(agent_id=schedule.agent_id), session_id=firing.session_id
                )
            body = TurnCreate(input=schedule.input, multitask_strategy="enqueue")
            await TurnService(self.state, owner).start(firing.session_id, body, turn_id=firing.turn_id)
        except AppError as exc:
            log.warning("schedule %s could not fire: %s", schedule.id, exc.detail)
            return exc.detail
        return None
