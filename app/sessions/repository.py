from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Uuid, bindparam, delete, exists, func, insert, literal, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import Label

from app.auth.principal import Principal
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Approval, File, Message, Session, Summary, Turn, TurnEvent
from app.models.base import utcnow
from app.sessions.expiry import Activity, IdleTtl


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
        stmt = self.visible(principal).where(Session.purpose != "eval")
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

    async def activity(self, sessions: Sequence[Session]) -> dict[uuid.UUID, Activity]:
        """What tells whether these sessions are idle (app/sessions/expiry.py): one statement."""
        if not sessions:
            return {}
        stmt = select(Session.id, Session.last_active_at, *latest_turn_columns()).where(
            Session.tenant_id == self.tenant_id, Session.id.in_([s.id for s in sessions])
        )
        rows = (await self.session.execute(stmt)).all()
        return {r.id: Activity(r.last_active_at, r.turn_status, r.turn_at) for r in rows}


def latest_turn_columns() -> tuple[Label[Any], Label[Any]]:
    """The status and last change of the session's latest turn, as columns of a statement on sessions."""
    latest = select(Turn.status, Turn.updated_at).where(Turn.session_id == Session.id)
    latest = latest.order_by(Turn.created_at.desc()).limit(1)
    return (
        latest.with_only_columns(Turn.status).scalar_subquery().label("turn_status"),
        latest.with_only_columns(Turn.updated_at).scalar_subquery().label("turn_at"),
    )


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


EXPIRED_REASON = "the session expired while this call waited for a decision"


@dataclass(frozen=True, slots=True)
class TurnKey:
    tenant_id: str
    turn_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class Expired:
    sessions: list[uuid.UUID]
    interrupted_turns: list[TurnKey]
    """Turns that waited for approvals in the expired sessions: to be ended by the caller."""
    candidates: int
    """Sessions examined (a full batch means there may be more)."""


class SweepRepository:
    """The statements of the session sweep: idle expiry and retention, each a bounded batch.

    Both read sessions through a partial index (open sessions by `last_active_at`, ended and not yet
    purged sessions by `closed_at`), so a pass costs its batch, not the table. The sweep is the
    service's own housekeeping across tenants; every statement is keyed by session or turn ids it
    selected.
    """

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def try_lock(self, key: int) -> bool:
        """PostgreSQL: take the transaction-level advisory lock `key`, False if another holds it."""
        return bool(await self.conn.scalar(select(func.pg_try_advisory_xact_lock(key))))

    async def expire_idle(self, ttl: IdleTtl, *, now: datetime, batch: int) -> Expired:
        """Expire up to `batch` open sessions idle past `ttl` at `now` (app/sessions/expiry.py), each
        closed at the instant it expired; expire their pending approvals.

        A candidate whose latest turn is busy, or changed within the TTL (a long turn, a resumed
        one), is not idle: its `last_active_at` catches up instead, so it leaves the front of the
        index and the next pass sees other sessions.
        """
        cutoff = ttl.cutoff(now)
        assert cutoff is not None
        stmt = (
            select(Session.id, Session.last_active_at, *latest_turn_columns())
            .where(Session.status == "open", Session.last_active_at < cutoff)
            .order_by(Session.last_active_at)
            .limit(batch)
        )
        if self.conn.dialect.name == "postgresql":
            stmt = stmt.with_for_update(of=Session, skip_locked=True)
        rows = (await self.conn.execute(stmt)).all()
        active, idle = [], []
        for r in rows:
            activity = Activity(r.last_active_at, r.turn_status, r.turn_at)
            expired_at = ttl.expired_at(activity, now)
            if expired_at is None:
                active.append({"sid": r.id, "at": activity.idle_since() or now})
            else:
                idle.append({"sid": r.id, "at": expired_at})
        if active:
            await self.conn.execute(
                update(Session).where(Session.id == bindparam("sid")).values(last_active_at=bindparam("at")), active
            )
        if not idle:
            return Expired([], [], len(rows))
        await self.conn.execute(
            update(Session)
            .where(Session.id == bindparam("sid"), Session.status == "open")
            .values(status="expired", closed_at=bindparam("at"), updated_at=now),
            idle,
        )
        ids = [i["sid"] for i in idle]
        await self.conn.execute(
            update(Approval)
            .where(Approval.session_id.in_(ids), Approval.status == "pending")
            .values(status="expired", decision_reason=EXPIRED_REASON, decided_at=now)
        )
        turns = await self.conn.execute(
            select(Turn.tenant_id, Turn.id).where(Turn.session_id.in_(ids), Turn.status == "interrupted")
        )
        return Expired(ids, [TurnKey(t.tenant_id, t.id) for t in turns], len(rows))

    async def interrupted_in_ended_sessions(self, *, limit: int) -> list[TurnKey]:
        """Interrupted turns left in expired sessions (a sweep stopped before ending them)."""
        stmt = (
            select(Turn.tenant_id, Turn.id)
            .where(Turn.status == "interrupted")
            .where(exists().where(Session.id == Turn.session_id, Session.status == "expired"))
            .limit(limit)
        )
        return [TurnKey(t.tenant_id, t.id) for t in await self.conn.execute(stmt)]

    async def sessions_to_purge(self, *, cutoff: datetime, batch: int) -> list[uuid.UUID]:
        stmt = (
            select(Session.id)
            .where(Session.status.in_(("closed", "expired")), Session.purged_at.is_(None), Session.closed_at < cutoff)
            .order_by(Session.closed_at)
            .limit(batch)
        )
        return list(await self.conn.scalars(stmt))

    async def delete_events(self, sessions: Sequence[uuid.UUID], *, rows: int) -> int:
        """Delete at most `rows` stored events of these sessions' turns; how many went."""
        turns = select(Turn.id).where(Turn.session_id.in_(sessions))
        chunk = select(TurnEvent.turn_id, TurnEvent.seq).where(TurnEvent.turn_id.in_(turns)).limit(rows)
        result = await self.conn.execute(delete(TurnEvent).where(tuple_(TurnEvent.turn_id, TurnEvent.seq).in_(chunk)))
        return int(result.rowcount)

    async def delete_messages(self, sessions: Sequence[uuid.UUID], *, rows: int) -> int:
        """Delete at most `rows` messages of these sessions (then their summaries)."""
        chunk = select(Message.id).where(Message.session_id.in_(sessions)).limit(rows)
        deleted = int((await self.conn.execute(delete(Message).where(Message.id.in_(chunk)))).rowcount)
        if deleted < rows:
            await self.conn.execute(delete(Summary).where(Summary.session_id.in_(sessions)))
        return deleted

    async def delete_files(self, sessions: Sequence[uuid.UUID]) -> list[uuid.UUID]:
        """Delete the files these sessions used; their ids (so bytes kept on disk go too)."""
        result = await self.conn.execute(delete(File).where(File.session_id.in_(sessions)).returning(File.id))
        return list(result.scalars().all())

    async def mark_purged(self, sessions: Sequence[uuid.UUID]) -> None:
        await self.conn.execute(update(Session).where(Session.id.in_(sessions)).values(purged_at=utcnow()))
