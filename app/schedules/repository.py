from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Agent, Schedule, ScheduleFiring, Turn

AGENT_ARCHIVED = "its agent was archived"


class ScheduleRepository(TenantRepository[Schedule]):
    model = Schedule

    async def get(self, owner_sub: str | None, schedule_id: uuid.UUID) -> Schedule | None:
        return await self.first(self.owned(owner_sub).where(Schedule.id == schedule_id))

    async def page(self, owner_sub: str | None, *, limit: int, cursor: str | None) -> list[Schedule]:
        stmt = paginate(
            self.owned(owner_sub), created_at=Schedule.created_at, row_id=Schedule.id, limit=limit, cursor=cursor
        )
        return await self.all(stmt)

    async def firings(self, schedule_id: uuid.UUID, *, limit: int) -> list[ScheduleFiring]:
        stmt = (
            select(ScheduleFiring)
            .where(ScheduleFiring.tenant_id == self.tenant_id, ScheduleFiring.schedule_id == schedule_id)
            .order_by(ScheduleFiring.scheduled_for.desc())
            .limit(limit)
        )
        return await self.all(stmt)


class DueSchedules:
    """The scheduler's sweep across tenants (each firing then runs as its schedule's owner)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def disable_orphaned(self) -> None:
        """Turn off the enabled schedules of archived agents: they would only record a failed firing a tick."""
        archived = select(Agent.id).where(Agent.tenant_id == Schedule.tenant_id, Agent.archived_at.is_not(None))
        stmt = (
            update(Schedule)
            .where(Schedule.enabled.is_(True), Schedule.agent_id.in_(archived))
            .values(enabled=False, disabled_reason=AGENT_ARCHIVED)
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(stmt)

    async def claim(self, now: datetime, *, limit: int) -> list[Schedule]:
        """Due schedules, locked for this transaction; rows another replica holds are skipped."""
        stmt = (
            select(Schedule)
            .where(Schedule.enabled.is_(True), Schedule.next_fire_at <= now)
            .order_by(Schedule.next_fire_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return list((await self.session.execute(stmt)).scalars().all())

    async def unstarted(self, now: datetime, *, limit: int) -> list[tuple[ScheduleFiring, Schedule]]:
        """Firings whose turn has not started yet: just claimed, or left by a replica that died."""
        stmt = (
            select(ScheduleFiring, Schedule)
            .join(Schedule, Schedule.id == ScheduleFiring.schedule_id)
            .where(ScheduleFiring.started.is_(False), ScheduleFiring.scheduled_for <= now)
            .order_by(ScheduleFiring.created_at)
            .limit(limit)
        )
        return [(f, s) for f, s in (await self.session.execute(stmt)).all()]

    def add_firing(self, firing: ScheduleFiring) -> None:
        self.session.add(firing)

    async def lock_unstarted(self, firing_id: uuid.UUID) -> ScheduleFiring | None:
        """The firing, locked for this transaction, if it has not started and no other replica holds it."""
        stmt = (
            select(ScheduleFiring)
            .where(ScheduleFiring.id == firing_id, ScheduleFiring.started.is_(False))
            .with_for_update(skip_locked=True)
        )
        firing: ScheduleFiring | None = (await self.session.execute(stmt)).scalars().first()
        return firing

    async def turn_stored(self, firing: ScheduleFiring) -> bool:
        """Whether the firing's turn was stored (its start ran, and the replica died before marking it)."""
        stmt = select(Turn.id).where(Turn.tenant_id == firing.tenant_id, Turn.id == firing.turn_id)
        return (await self.session.execute(stmt)).first() is not None
