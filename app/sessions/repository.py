from __future__ import annotations

import uuid

from sqlalchemy import Select

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Message, Session


class SessionRepository(TenantRepository[Session]):
    """Sessions visible to a principal: its own, or every one of the tenant for an admin."""

    model = Session

    def visible(self, principal: Principal) -> Select[tuple[Session]]:
        return self.owned(principal.owner_filter)

    async def get(self, principal: Principal, session_id: uuid.UUID, *, for_update: bool = False) -> Session | None:
        stmt = self.visible(principal).where(Session.id == session_id)
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def page(
        self, principal: Principal, *, agent_id: uuid.UUID | None, limit: int, cursor: str | None
    ) -> list[Session]:
        stmt = self.visible(principal)
        if agent_id is not None:
            stmt = stmt.where(Session.agent_id == agent_id)
        return await self.all(
            paginate(stmt, created_at=Session.created_at, row_id=Session.id, limit=limit, cursor=cursor)
        )


class MessageRepository(TenantRepository[Message]):
    model = Message

    async def page(self, session_id: uuid.UUID, *, after: int, limit: int) -> list[Message]:
        stmt = self.readable().where(Message.session_id == session_id, Message.id > after)
        return await self.all(stmt.order_by(Message.id).limit(limit + 1))
