"""Sessions pin one agent version: its config is copied in as the snapshot at creation."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.repository import AgentVersionRepository
from app.auth.principal import Principal
from app.container import Container
from app.core.bounds import INT64_MAX
from app.core.db import unit_of_work
from app.core.pagination import Page, page_of
from app.errors import BadRequest, Conflict, NotFound
from app.models import Session
from app.models.base import utcnow
from app.sessions import schemas
from app.sessions.repository import MessageRepository, SessionRepository
from app.sessions.store import create_pinned, get_or_create_pinned


async def new_session(
    container: Container, principal: Principal, data: schemas.SessionCreate, *, session_id: uuid.UUID | None = None
) -> tuple[schemas.Session, bool]:
    """(the session, created?). One statement when the agent version can be pinned (two for a get by
    `external_id`); otherwise the ORM path, for its precise error.

    `session_id` names a new session (a protocol adapter derives it from its thread id); a session
    with that id already existing fails on the primary key.
    """
    fields: dict[str, Any] = {
        "tenant_id": principal.tenant_id, "owner_sub": principal.sub, "agent_id": data.agent_id,
        "version": data.agent_version, "metadata": data.metadata,
    }  # fmt: skip
    if data.external_id is None:
        row, created = await create_pinned(container.sql, **fields, session_id=session_id), True
    else:
        row, created = await get_or_create_pinned(container.sql, **fields, external_id=data.external_id)
    if row is not None:
        return schemas.Session.model_validate(dict(row)), created
    async with unit_of_work(container.session_factory) as db:
        return schemas.Session.model_validate(await SessionService(db, principal).create(data)), True


class SessionService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.sessions = SessionRepository(db, principal.tenant_id)
        self.messages = MessageRepository(db, principal.tenant_id)

    async def create(self, data: schemas.SessionCreate) -> Session:
        pinned = await AgentVersionRepository(self.db, self.principal.tenant_id).pinned(
            data.agent_id, data.agent_version
        )
        if pinned is None:
            raise NotFound(f"Agent {data.agent_id} not found")
        if pinned.archived_at is not None:
            raise Conflict(f"Agent {data.agent_id} is archived: it takes no new sessions")
        if pinned.version is None:
            raise NotFound(f"Agent {data.agent_id} has no version {data.agent_version}")
        return await self.sessions.add(
            Session(
                id=uuid.uuid4(),
                tenant_id=self.principal.tenant_id,
                agent_id=data.agent_id,
                agent_version=pinned.version,
                owner_sub=self.principal.sub,
                snapshot=pinned.config,
                meta=data.metadata,
                status="open",
                external_id=data.external_id,
            )
        )

    async def get(self, session_id: uuid.UUID, *, for_update: bool = False) -> Session:
        session = await self.sessions.get(self.principal, session_id, for_update=for_update)
        if session is None:
            raise NotFound(f"Session {session_id} not found")
        return session

    async def page(self, *, agent_id: uuid.UUID | None, limit: int, cursor: str | None) -> Page[schemas.Session]:
        rows = await self.sessions.page(self.principal, agent_id=agent_id, limit=limit, cursor=cursor)
        items, next_cursor = page_of(rows, limit)
        return Page(items=[schemas.Session.model_validate(s) for s in items], next_cursor=next_cursor)

    async def close(self, session_id: uuid.UUID) -> None:
        session = await self.get(session_id, for_update=True)
        if session.status != "open":
            return
        session.status = "closed"
        session.closed_at = utcnow()
        await self.db.flush()

    async def messages_page(self, session_id: uuid.UUID, *, limit: int, cursor: str | None) -> schemas.MessagePage:
        await self.get(session_id)
        after = _after(cursor)
        rows = await self.messages.page(session_id, after=after, limit=limit)
        more = len(rows) > limit
        rows = rows[:limit]
        return schemas.MessagePage(
            items=[schemas.MessageOut.model_validate(m) for m in rows],
            next_cursor=str(rows[-1].id) if more else None,
        )


def session_not_open(session_id: uuid.UUID, status: str) -> Conflict:
    """409 for a turn (or a decision) on a session that ended; `code` says which way it ended."""
    if status == "expired":
        return Conflict(f"Session {session_id} expired: it was idle too long", code="session_expired")
    return Conflict(f"Session {session_id} is closed", code="session_closed")


_MAX_ID_DIGITS = len(str(INT64_MAX))


def _after(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > _MAX_ID_DIGITS or int(cursor) > INT64_MAX:
        raise BadRequest("Invalid cursor", errors=[{"loc": ["query", "cursor"], "msg": "invalid cursor"}])
    return int(cursor)
