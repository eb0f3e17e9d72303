from __future__ import annotations

import uuid
from typing import Any

import orjson
from sqlalchemy import Select, delete, func, select, update

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import ACTIVE_STATUSES, Approval, Message, Turn, TurnEvent
from app.models.base import utcnow
from app.runtime.port.events import PLAN_EVENTS_LIKE
from app.runtime.stream import SEQ_BLOCK


class TurnRepository(TenantRepository[Turn]):
    """Turns visible to a principal: those of its own sessions, or the tenant's for an admin."""

    model = Turn

    def visible(self, principal: Principal) -> Select[tuple[Turn]]:
        return self.owned(principal.owner_filter)

    async def get(self, principal: Principal, turn_id: uuid.UUID, *, for_update: bool = False) -> Turn | None:
        """The turn if the principal may see it; `for_update` locks only a row that passes that filter."""
        stmt = self.visible(principal).where(Turn.id == turn_id)
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def claim_for_resume(self, turn_id: uuid.UUID, *, approval_id: uuid.UUID, runner_id: uuid.UUID) -> bool:
        """Move an interrupted turn back to `running` for this runner; False if another decision did first."""
        claimed = await self.session.execute(
            update(Turn)
            .where(Turn.tenant_id == self.tenant_id, Turn.id == turn_id, Turn.status == "interrupted")
            .values(  # a resume is never refused for concurrency: it holds no slot (app/runtime/store/admission.py)
                status="running",
                resumed_by=approval_id,
                runner_id=runner_id,
                updated_at=utcnow(),
                concurrency_slot=None,
                seq_ceiling=Turn.last_seq + SEQ_BLOCK,
            )
            .returning(Turn.id)
        )
        return claimed.first() is not None

    async def expire_pending_approvals(self, turn_id: uuid.UUID) -> None:
        """The approvals of a turn that ended without their decisions can no longer be decided."""
        await self.session.execute(
            update(Approval)
            .where(Approval.tenant_id == self.tenant_id, Approval.turn_id == turn_id, Approval.status == "pending")
            .values(status="expired")
        )

    async def delete_messages(self, turn_id: uuid.UUID) -> None:
        """Remove a turn's messages from its session's history (a rolled-back turn)."""
        await self.session.execute(
            delete(Message).where(Message.tenant_id == self.tenant_id, Message.turn_id == turn_id)
        )

    async def active_in(self, session_id: uuid.UUID) -> Turn | None:
        return await self.first(self.readable().where(Turn.session_id == session_id, Turn.status.in_(ACTIVE_STATUSES)))

    async def page(self, principal: Principal, session_id: uuid.UUID, *, limit: int, cursor: str | None) -> list[Turn]:
        stmt = self.visible(principal).where(Turn.session_id == session_id)
        return await self.all(paginate(stmt, created_at=Turn.created_at, row_id=Turn.id, limit=limit, cursor=cursor))

    async def events_after(self, turn_id: uuid.UUID, after: int, limit: int = 1000) -> list[tuple[int, str, str]]:
        stmt = (
            select(TurnEvent.seq, TurnEvent.type, TurnEvent.data)
            .where(TurnEvent.tenant_id == self.tenant_id, TurnEvent.turn_id == turn_id, TurnEvent.seq > after)
            .order_by(TurnEvent.seq)
            .limit(limit)
        )
        return [(r.seq, r.type, r.data) for r in await self.session.execute(stmt)]

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
