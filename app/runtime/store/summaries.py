"""Compaction summaries of a session: the newest one, and storing one with the message ids it covers.

A summary stands for the first `message_count` messages of its session's history (superseded
messages are not in it), which is how the built-in context applies it to a conversation read in
storage order; the ids of the first and the last of those messages are stored with it so the range
is explicit. Hot-path `Query` statements
(app/core/sql.py), both keyed by tenant and session.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Integer, Table, bindparam, select

from app.context.compaction import StoredSummary
from app.core.sql import Query, Sql, insert_rows
from app.models import Message, Summary
from app.models.base import utcnow
from app.runtime.port.journal import TurnIdentity

SUMMARIES: Table = Summary.__table__  # type: ignore[assignment]
_SESSION = (Summary.tenant_id == bindparam("tenant_id"), Summary.session_id == bindparam("session_id"))
LATEST = Query(
    select(Summary.content, Summary.message_count, Summary.model_calls)
    .where(*_SESSION)
    .order_by(Summary.last_message_id.desc())
    .limit(1)
)
MESSAGE_AT = Query(
    select(Message.id)
    .where(
        Message.tenant_id == bindparam("tenant_id"),
        Message.session_id == bindparam("session_id"),
        Message.superseded_by_turn_id.is_(None),
    )
    .order_by(Message.id)
    .offset(bindparam("position", type_=Integer))
    .limit(1)
)


async def latest_summary(sql: Sql, tenant_id: str, session_id: uuid.UUID) -> StoredSummary | None:
    row = await sql.fetchrow(LATEST, {"tenant_id": tenant_id, "session_id": session_id})
    if row is None:
        return None
    return StoredSummary(content=row["content"], message_count=row["message_count"], model_calls=row["model_calls"])


async def save_summary(sql: Sql, ident: TurnIdentity, summary: StoredSummary, *, tokens: int) -> None:
    """Store `summary` with the ids of the session's first and `message_count`-th messages (all stored)."""
    key = {"tenant_id": ident.tenant_id, "session_id": ident.session_id}
    first = await sql.fetchval(MESSAGE_AT, {**key, "position": 0})
    last = await sql.fetchval(MESSAGE_AT, {**key, "position": summary.message_count - 1})
    if first is None or last is None:
        raise LookupError(f"session {ident.session_id} has fewer than {summary.message_count} stored messages")
    row = {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id, "turn_id": ident.turn_id,
        "first_message_id": first, "last_message_id": last, "message_count": summary.message_count,
        "model_calls": summary.model_calls, "content": summary.content, "tokens": tokens, "created_at": utcnow(),
    }  # fmt: skip
    await insert_rows(sql, SUMMARIES, [row])
