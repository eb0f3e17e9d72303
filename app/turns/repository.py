from __future__ import annotations

import uuid
from typing import Any

import orjson
from sqlalchemy import Select, func, select

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import ACTIVE_STATUSES, Turn, TurnEvent
from app.runtime.port.events import PLAN_EVENTS_LIKE


class TurnRepository(TenantRepository[Turn]):
    """Turns visible to a principal: those of its own sessions, or the tenant's for an admin."""

    model = Turn

    def visible(self, principal: Principal) -> Select[tuple[Turn]]:
        return self.owned(principal.owner_filter)

    async def get(self, principal: Principal, turn_id: uuid.UUID, *, for_update: bool = False) -> Turn | None:
        """The turn if the principal may see it; `for_update` locks only a row that passes that filter."""
        stmt = self.visible(principal).where(Turn.id == turn_id)
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def superseder_of(self, turn_id: uuid.UUID) -> uuid.UUID | None:
        """The turn that regenerated this one, if any."""
        stmt = select(Turn.id).where(Turn.tenant_id == self.tenant_id, Turn.supersedes_turn_id == turn_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def latest_in(self, session_id: uuid.UUID) -> Turn | None:
        """The session's newest turn (queued ones included)."""
        stmt = self.readable().where(Turn.session_id == session_id)
        return await self.first(stmt.order_by(Turn.created_at.desc(), Turn.id.desc()))

    async def status_of(self, turn_id: uuid.UUID) -> str | None:
        stmt = select(Turn.status).where(Turn.tenant_id == self.tenant_id, Turn.id == turn_id)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def unfinished_in(self, session_id: uuid.UUID) -> Turn | None:
        """The session's active turn, or one queued behind it."""
        stmt = self.readable().where(Turn.session_id == session_id, Turn.status.in_((*ACTIVE_STATUSES, "queued")))
        return await self.first(stmt)

    async def page(self, principal: Principal, session_id: uuid.UUID, *, limit: int, cursor: str | None) -> list[Turn]:
        stmt = self.visible(principal).where(Turn.session_id == session_id)
        return await self.all(paginate(stmt, created_at=Turn.created_at, row_id=Turn.id, limit=limit, cursor=cursor))

    async def plan_events(self, turn_id: uuid.UUID) -> list[dict[str, Any]]:
        """An autonomous turn's `plan.*` events in order (its plan and each step's state)."""
        stmt = (
            select(TurnEvent.data)
            .where(
                TurnEvent.tenant_id == self.tenant_id,
                TurnEvent.turn_id == turn_id,
                TurnEvent.type.like(PLAN_EVENTS_LIKE),
            )
            .order_by(TurnEvent.seq)
        )
        return [orjson.loads(data) for data in (await self.session.scalars(stmt))]

    async def last_seq_of(self, turn_id: uuid.UUID, event_type: str) -> int | None:
        """The sequence number of the turn's latest event of this type (e.g. where its latest run started)."""
        stmt = select(func.max(TurnEvent.seq)).where(
            TurnEvent.tenant_id == self.tenant_id, TurnEvent.turn_id == turn_id, TurnEvent.type == event_type
        )
        return (await self.session.execute(stmt)).scalar_one_or_none()
