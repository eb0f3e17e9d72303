"""The statements of the session sweep: idle expiry and retention, each a bounded batch.

Both read sessions through a partial index (open sessions by `last_active_at`, ended and not yet
purged sessions by `closed_at`), so a pass costs its batch, not the table. The sweep is the service's
own housekeeping across tenants; every statement is keyed by session or turn ids it selected.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, exists, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.models import Approval, File, Message, Session, Summary, Turn, TurnEvent
from app.models.base import utcnow

EXPIRED_REASON = "the session expired while this call waited for a decision"
SESSION_EXPIRED = {
    "code": "session_expired",
    "message": "the session expired (idle past SESSION_IDLE_TTL_SECONDS) while this turn waited for approvals",
}
"""The error of an interrupted turn ended because its session expired."""


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


async def expire_idle(conn: AsyncConnection, *, cutoff: datetime, batch: int) -> Expired:
    """Expire up to `batch` open sessions idle since before `cutoff`; expire their pending approvals.

    A candidate whose latest turn is still running, or ended after the cutoff (a long turn, a
    resumed one), is not idle: its `last_active_at` catches up instead, so it leaves the front of
    the index and the next pass sees other sessions.
    """
    latest = select(Turn.status, Turn.updated_at).where(Turn.session_id == Session.id)
    latest = latest.order_by(Turn.created_at.desc()).limit(1)
    stmt = (
        select(
            Session.id,
            latest.with_only_columns(Turn.status).scalar_subquery().label("turn_status"),
            latest.with_only_columns(Turn.updated_at).scalar_subquery().label("turn_at"),
        )
        .where(Session.status == "open", Session.last_active_at < cutoff)
        .order_by(Session.last_active_at)
        .limit(batch)
    )
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=Session, skip_locked=True)
    rows = (await conn.execute(stmt)).all()
    now = utcnow()
    active = [
        {"sid": r.id, "at": now if r.turn_status == "running" else r.turn_at}
        for r in rows
        if r.turn_status == "running" or (r.turn_at is not None and r.turn_at >= cutoff)
    ]
    busy = {a["sid"] for a in active}
    idle = [r.id for r in rows if r.id not in busy]
    if active:
        await conn.execute(
            update(Session).where(Session.id == bindparam("sid")).values(last_active_at=bindparam("at")), active
        )
    if not idle:
        return Expired([], [], len(rows))
    await conn.execute(
        update(Session)
        .where(Session.id.in_(idle), Session.status == "open")
        .values(status="expired", closed_at=now, updated_at=now)
    )
    await conn.execute(
        update(Approval)
        .where(Approval.session_id.in_(idle), Approval.status == "pending")
        .values(status="expired", decision_reason=EXPIRED_REASON, decided_at=now)
    )
    turns = await conn.execute(
        select(Turn.tenant_id, Turn.id).where(Turn.session_id.in_(idle), Turn.status == "interrupted")
    )
    return Expired(idle, [TurnKey(t.tenant_id, t.id) for t in turns], len(rows))


async def interrupted_in_ended_sessions(conn: AsyncConnection, *, limit: int) -> list[TurnKey]:
    """Interrupted turns left in expired sessions (a sweep stopped before ending them)."""
    stmt = (
        select(Turn.tenant_id, Turn.id)
        .where(Turn.status == "interrupted")
        .where(exists().where(Session.id == Turn.session_id, Session.status == "expired"))
        .limit(limit)
    )
    return [TurnKey(t.tenant_id, t.id) for t in await conn.execute(stmt)]


async def sessions_to_purge(conn: AsyncConnection, *, cutoff: datetime, batch: int) -> list[uuid.UUID]:
    stmt = (
        select(Session.id)
        .where(Session.status.in_(("closed", "expired")), Session.purged_at.is_(None), Session.closed_at < cutoff)
        .order_by(Session.closed_at)
        .limit(batch)
    )
    return list(await conn.scalars(stmt))


async def delete_events(conn: AsyncConnection, sessions: Sequence[uuid.UUID], *, rows: int) -> int:
    """Delete at most `rows` stored events of these sessions' turns; how many went."""
    turns = select(Turn.id).where(Turn.session_id.in_(sessions))
    chunk = select(TurnEvent.turn_id, TurnEvent.seq).where(TurnEvent.turn_id.in_(turns)).limit(rows)
    result = await conn.execute(delete(TurnEvent).where(tuple_(TurnEvent.turn_id, TurnEvent.seq).in_(chunk)))
    return int(result.rowcount)


async def delete_messages(conn: AsyncConnection, sessions: Sequence[uuid.UUID], *, rows: int) -> int:
    """Delete at most `rows` messages (then the summaries made of them and the files they used) of these sessions."""
    chunk = select(Message.id).where(Message.session_id.in_(sessions)).limit(rows)
    deleted = int((await conn.execute(delete(Message).where(Message.id.in_(chunk)))).rowcount)
    if deleted < rows:
        await conn.execute(delete(Summary).where(Summary.session_id.in_(sessions)))
        await conn.execute(delete(File).where(File.session_id.in_(sessions)))
    return deleted


async def mark_purged(conn: AsyncConnection, sessions: Sequence[uuid.UUID]) -> None:
    await conn.execute(update(Session).where(Session.id.in_(sessions)).values(purged_at=utcnow()))
