from __future__ import annotations

import uuid

from sqlalchemy import Select, Uuid, func, insert, literal, select

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Message, Session, Summary


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

    async def forks_of(self, session_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[uuid.UUID]]:
        """The sessions forked from each of `session_ids` (any owner's: a fork has its origin's owner)."""
        if not session_ids:
            return {}
        stmt = (
            select(Session.forked_from_session_id, Session.id)
            .where(Session.tenant_id == self.tenant_id, Session.forked_from_session_id.in_(session_ids))
            .order_by(Session.created_at, Session.id)
        )
        forks: dict[uuid.UUID, list[uuid.UUID]] = {}
        for origin, fork in await self.session.execute(stmt):
            if origin is not None:
                forks.setdefault(origin, []).append(fork)
        return forks


class MessageRepository(TenantRepository[Message]):
    model = Message

    def _history(self, session_id: uuid.UUID) -> Select[tuple[Message]]:
        return self.readable().where(Message.session_id == session_id, Message.superseded_by_turn_id.is_(None))

    async def page(self, session_id: uuid.UUID, *, after: int, limit: int, superseded: bool = False) -> list[Message]:
        """`superseded`: also the messages a regenerated turn put aside."""
        stmt = self.readable().where(Message.session_id == session_id) if superseded else self._history(session_id)
        return await self.all(stmt.where(Message.id > after).order_by(Message.id).limit(limit + 1))

    async def get(self, message_id: int) -> Message | None:
        return await self.first(self.readable().where(Message.id == message_id))

    async def batch_end(self, message: Message) -> int:
        """The last message an assistant message keeps with it: its last stored tool result (or itself)."""
        call_ids = [c["id"] for c in message.tool_calls or ()]
        if not call_ids:
            return message.id
        stmt = select(func.max(Message.id)).where(
            Message.tenant_id == self.tenant_id,
            Message.session_id == message.session_id,
            Message.turn_id == message.turn_id,
            Message.role == "tool",
            Message.id > message.id,
            Message.tool_call_id.in_(call_ids),
        )
        return int(await self.session.scalar(stmt) or message.id)

    async def history_ids(self, session_id: uuid.UUID, *, upto: int | None = None) -> list[int]:
        stmt = select(Message.id).where(
            Message.tenant_id == self.tenant_id,
            Message.session_id == session_id,
            Message.superseded_by_turn_id.is_(None),
        )
        if upto is not None:
            stmt = stmt.where(Message.id <= upto)
        return list((await self.session.scalars(stmt.order_by(Message.id))).all())

    async def copy_history(self, origin: uuid.UUID, into: uuid.UUID, *, upto: int | None) -> list[int]:
        """Copy the origin's history (up to message `upto`) into session `into`, in order; the copies'
        ids. A copy keeps its `turn_id` and `created_at`: the turn that wrote it, in the origin."""
        copied = ("tenant_id", "turn_id", "role", "content", "tool_calls", "tool_call_id", "name", "is_error",
                  "created_at")  # fmt: skip
        source = select(literal(into, Uuid()), *(getattr(Message, c) for c in copied)).where(
            Message.tenant_id == self.tenant_id,
            Message.session_id == origin,
            Message.superseded_by_turn_id.is_(None),
        )
        if upto is not None:
            source = source.where(Message.id <= upto)
        await self.session.execute(insert(Message).from_select(["session_id", *copied], source.order_by(Message.id)))
        return await self.history_ids(into)


class SummaryRepository(TenantRepository[Summary]):
    model = Summary

    async def latest_within(self, session_id: uuid.UUID, *, upto: int | None) -> Summary | None:
        """The session's newest summary that covers no message after `upto`."""
        stmt = self.readable().where(Summary.session_id == session_id)
        if upto is not None:
            stmt = stmt.where(Summary.last_message_id <= upto)
        return await self.first(stmt.order_by(Summary.last_message_id.desc()))
