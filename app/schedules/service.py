"""Cron schedules: create, list, read the firings of, delete. Firing is the worker's (worker.py)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.repository import AgentRepository
from app.auth.principal import Principal
from app.core.pagination import page_of
from app.errors import Conflict, InvalidInput, NotFound
from app.models import Schedule
from app.models.base import utcnow
from app.schedules import cron, schemas
from app.schedules.repository import ScheduleRepository
from app.sessions.repository import SessionRepository

FIRINGS_SHOWN = 100


class ScheduleService:
    def __init__(self, db: AsyncSession, principal: Principal, *, min_interval_seconds: int) -> None:
        self.db = db
        self.principal = principal
        self.schedules = ScheduleRepository(db, principal.tenant_id)
        self.min_interval_seconds = min_interval_seconds

    async def create(self, body: schemas.ScheduleCreate) -> schemas.ScheduleOut:
        now = utcnow()
        try:
            cron.validate(body.cron, body.timezone, min_interval_seconds=self.min_interval_seconds, now=now)
        except cron.InvalidSchedule as exc:
            raise InvalidInput(str(exc), field=f"body.{exc.field}") from exc
        agent = await AgentRepository(self.db, self.principal.tenant_id).get(body.agent_id)
        if agent is None:
            raise NotFound(f"Agent {body.agent_id} not found")
        if agent.archived_at is not None:
            raise Conflict(f"Agent {body.agent_id} is archived: it takes no new schedules")
        session_id = None if body.session == "new" else body.session
        if session_id is not None:
            await self._check_session(session_id, body.agent_id)
        row = Schedule(
            id=uuid.uuid4(), tenant_id=self.principal.tenant_id, owner_sub=self.principal.sub,
            agent_id=body.agent_id, cron=body.cron, timezone=body.timezone, input=body.input,
            session_id=session_id, enabled=body.enabled, next_fire_at=cron.next_tick(body.cron, body.timezone, now),
        )  # fmt: skip
        return view(await self.schedules.add(row))

    async def _check_session(self, session_id: uuid.UUID, agent_id: uuid.UUID) -> None:
        own = Principal(sub=self.principal.sub, tenant_id=self.principal.tenant_id)
        session = await SessionRepository(self.db, self.principal.tenant_id).get(own, session_id)
        if session is None:
            raise NotFound(f"Session {session_id} not found")
        if session.agent_id != agent_id:
            raise InvalidInput(f"Session {session_id} belongs to another agent", field="body.session")
        if session.status != "open":
            raise Conflict(f"Session {session_id} is {session.status}")

    async def list(self, *, limit: int, cursor: str | None) -> schemas.SchedulePage:
        rows = await self.schedules.page(self.principal.owner_filter, limit=limit, cursor=cursor)
        items, next_cursor = page_of(rows, limit)
        return schemas.SchedulePage(items=[view(s) for s in items], next_cursor=next_cursor)

    async def get(self, schedule_id: uuid.UUID) -> schemas.ScheduleOut:
        return view(await self._load(schedule_id))

    async def firings(self, schedule_id: uuid.UUID) -> schemas.FiringPage:
        await self._load(schedule_id)
        rows = await self.schedules.firings(schedule_id, limit=FIRINGS_SHOWN)
        return schemas.FiringPage(items=[schemas.FiringOut.model_validate(f) for f in rows])

    async def delete(self, schedule_id: uuid.UUID) -> None:
        await self.db.delete(await self._load(schedule_id))
        await self.db.flush()

    async def _load(self, schedule_id: uuid.UUID) -> Schedule:
        row = await self.schedules.get(self.principal.owner_filter, schedule_id)
        if row is None:
            raise NotFound(f"Schedule {schedule_id} not found")
        return row


def view(row: Schedule) -> schemas.ScheduleOut:
    return schemas.ScheduleOut(
        id=row.id, agent_id=row.agent_id, owner=row.owner_sub, cron=row.cron, timezone=row.timezone,
        input=row.input, session=row.session_id or "new", enabled=row.enabled,
        disabled_reason=row.disabled_reason, next_fire_at=row.next_fire_at,
        last_fired_at=row.last_fired_at, created_at=row.created_at,
    )  # fmt: skip
