"""Sessions pin one agent version: its config is copied in as the snapshot at creation."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

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
from app.sessions.expiry import IdleTtl
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
    ttl = idle_ttl(container)
    if row is not None and created:
        return schemas.Session.model_validate(dict(row)), created
    async with unit_of_work(container.session_factory) as db:
        service = SessionService(db, principal, ttl=ttl)
        if row is not None:  # found by its external_id: it may have expired, or been forked
            return await service.read(row["id"]), False
        return schemas.Session.model_validate(await service.create(data)), True


def idle_ttl(container: Container) -> IdleTtl:
    return IdleTtl(container.settings.lifecycle.session_idle_ttl_seconds)


class SessionExpiry:
    """The engine's check of a new turn's session against the idle TTL (TurnEngine's `expiry`)."""

    def __init__(self, session_factory: async_sessionmaker[AsyncSession], ttl: IdleTtl) -> None:
        self._session_factory = session_factory
        self._ttl = ttl

    def may_have_expired(self, last_active_at: datetime, now: datetime) -> bool:
        return self._ttl.may_have_expired(last_active_at, now)

    async def status(self, caller: Principal, session_id: uuid.UUID) -> str:
        """The status of a session whose last turn started longer ago than the TTL (off the hot path)."""
        async with unit_of_work(self._session_factory) as db:
            service = SessionService(db, caller, ttl=self._ttl)
            return await service.status_of(await service.get(session_id))


class SessionService:
    def __init__(self, db: AsyncSession, principal: Principal, *, ttl: IdleTtl) -> None:
        self.db = db
        self.principal = principal
        self.ttl = ttl
        self.sessions = SessionRepository(db, principal.tenant_id)
        self.messages = MessageRepository(db, principal.tenant_id)

    async def create(self, data: schemas.SessionCreate, *, owner_sub: str | None = None) -> Session:
        """`owner_sub`: the new session's owner (default: the caller; a fork keeps its origin's owner)."""
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
                owner_sub=owner_sub or self.principal.sub,
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

    async def read(self, session_id: uuid.UUID) -> schemas.Session:
        (view,) = await self.views([await self.get(session_id)])
        return view

    async def status_of(self, session: Session) -> str:
        """The session's status now: `expired` once idle past the TTL, swept or not (app/sessions/expiry.py)."""
        (view,) = await self.views([session])
        return view.status

    async def views(self, rows: list[Session]) -> list[schemas.Session]:
        """The sessions as a reader sees them now, with their forks; one more statement only if some may be
        idle past the TTL."""
        now = utcnow()
        stale = [s for s in rows if s.status == "open" and self.ttl.may_have_expired(s.last_active_at, now)]
        activity = await self.sessions.activity(stale)
        forks = await self.sessions.forks_of([s.id for s in rows])
        views = []
        for row in rows:
            view = schemas.Session.model_validate(row).model_copy(update={"forks": forks.get(row.id, [])})
            expired_at = self.ttl.expired_at(activity[row.id], now) if row.id in activity else None
            views.append(view.model_copy(update={"status": "expired", "closed_at": expired_at}) if expired_at else view)
        return views

    async def page(self, *, agent_id: uuid.UUID | None, limit: int, cursor: str | None) -> Page[schemas.Session]:
        rows = await self.sessions.page(self.principal, agent_id=agent_id, limit=limit, cursor=cursor)
        items, next_cursor = page_of(rows, limit)
        return Page(items=await self.views(items), next_cursor=next_cursor)

    async def rename(self, session_id: uuid.UUID, data: schemas.SessionUpdate) -> Session:
        session = await self.get(session_id, for_update=True)
        session.title = data.title
        await self.db.flush()
        return session

    async def close(self, session_id: uuid.UUID) -> None:
        """Close an open session; one that ended (closed, or expired even if not swept yet) stays as it is."""
        session = await self.get(session_id, for_update=True)
        if await self.status_of(session) != "open":
            return
        session.status = "closed"
        session.closed_at = utcnow()
        await self.db.flush()

    async def messages_page(
        self, session_id: uuid.UUID, *, limit: int, cursor: str | None, superseded: bool = False
    ) -> schemas.MessagePage:
        await self.get(session_id)
        after = _after(cursor)
        rows = await self.messages.page(session_id, after=after, limit=limit, superseded=superseded)
        more = len(rows) > limit
        rows = rows[:limit]
        return schemas.MessagePage(
            items=[schemas.MessageOut.model_validate(m) for m in rows],
            next_cursor=str(rows[-1].id) if more else None,
        )


_MAX_ID_DIGITS = len(str(INT64_MAX))


def _after(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > _MAX_ID_DIGITS or int(cursor) > INT64_MAX:
        raise BadRequest("Invalid cursor", errors=[{"loc": ["query", "cursor"], "msg": "invalid cursor"}])
    return int(cursor)
