from __future__ import annotations

import uuid
from typing import Any

import orjson
from sqlalchemy import Select, func, select

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Turn, TurnEvent
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
