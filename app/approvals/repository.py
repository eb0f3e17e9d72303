from __future__ import annotations

import uuid

from sqlalchemy import Select

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Approval


class ApprovalRepository(TenantRepository[Approval]):
    """Approvals visible to a principal: those of its own sessions, or the tenant's for an admin."""

    model = Approval

    def visible(self, principal: Principal) -> Select[tuple[Approval]]:
        return self.owned(principal.owner_filter)

    async def get(self, principal: Principal, approval_id: uuid.UUID, *, for_update: bool = False) -> Approval | None:
        stmt = self.visible(principal).where(Approval.id == approval_id)
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def of_turn(self, turn_id: uuid.UUID, *, loop: int | None = None) -> list[Approval]:
        stmt = self.readable().where(Approval.turn_id == turn_id)
        if loop is not None:
            stmt = stmt.where(Approval.loop == loop)
        return await self.all(stmt.order_by(Approval.created_at, Approval.tool_call_id))

    async def page(
        self,
        principal: Principal,
        *,
        status: str | None,
        session_id: uuid.UUID | None,
        limit: int,
        cursor: str | None,
    ) -> list[Approval]:
        stmt = self.visible(principal)
        if status is not None:
            stmt = stmt.where(Approval.status == status)
        if session_id is not None:
            stmt = stmt.where(Approval.session_id == session_id)
        return await self.all(
            paginate(stmt, created_at=Approval.created_at, row_id=Approval.id, limit=limit, cursor=cursor)
        )
