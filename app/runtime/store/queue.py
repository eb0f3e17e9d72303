"""Turns that wait behind their session's active turn (`multitask_strategy: enqueue`).

A queued turn is a `turns` row with status `queued` and no user message yet: its message joins the
history when it starts, after everything the turn ahead of it wrote. It starts when its session has
no active turn — the partial unique index on active turns decides, so two replicas racing to start
the next turn cannot both win. Whoever settles a turn starts the next one; the lease's sweep starts
any queue left behind by a replica that died, and an enqueuer that finds the session idle starts it
itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, exists, or_, select
from sqlalchemy.orm import aliased

from app.core.sql import INTEGRITY_ERRORS, Query, Sql, bare, insert_rows
from app.models import ACTIVE_STATUSES, Turn
from app.models.base import utcnow
from app.providers.base import Attachment, ChatMessage
from app.runtime.port.journal import TurnIdentity
from app.runtime.store.admission import slot_params
from app.runtime.store.status import CANCEL_ONE, CANCEL_QUEUED, PROMOTE, SLOTTED_PROMOTE
from app.runtime.store.turns import MESSAGES, TURNS, message_row

MAX_QUEUED_PER_SESSION = 16

_turns = bare(TURNS)
"""UPDATE parameters are named `in_*`/`to_*`: SQLAlchemy reserves column names for SET values."""


def _active(status: Any) -> ColumnElement[bool]:
    """`status IN ('running', 'interrupted')`, spelled out: hot-path queries take no IN lists."""
    return or_(*(status == name for name in ACTIVE_STATUSES))


ACTIVE_TURN = Query(
    select(Turn.id).where(
        Turn.tenant_id == bindparam("tenant_id"),
        Turn.session_id == bindparam("session_id"),
        _active(Turn.status),
    )
)
ACTIVE = Query(
    select(Turn.id, Turn.status).where(
        Turn.tenant_id == bindparam("tenant_id"),
        Turn.session_id == bindparam("session_id"),
        _active(Turn.status),
    )
)
QUEUED_COUNT = Query(
    select(Turn.id).where(
        Turn.tenant_id == bindparam("tenant_id"), Turn.session_id == bindparam("session_id"), Turn.status == "queued"
    )
)
_ahead = aliased(Turn)
STALLED = Query(
    select(Turn.tenant_id, Turn.session_id)
    .where(
        Turn.status == "queued",
        ~exists().where(and_(_ahead.session_id == Turn.session_id, _active(_ahead.status))),
    )
    .distinct()
    .limit(bindparam("limit"))
)
"""Sessions whose queue no one is going to start (a sweep across tenants, like recovery's)."""


class QueueFull(Exception):
    pass


class TurnQueue:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    async def enqueue(self, turn: dict[str, Any]) -> None:
        """Store `turn` as queued (its user message is written when it starts)."""
        waiting = await self.sql.fetch(QUEUED_COUNT, {"tenant_id": turn["tenant_id"], "session_id": turn["session_id"]})
        if len(waiting) >= MAX_QUEUED_PER_SESSION:
            raise QueueFull(f"{MAX_QUEUED_PER_SESSION} turns already wait in this session")
        await insert_rows(self.sql, TURNS, [{**turn, "status": "queued", "runner_id": None}])

    async def promote(
        self, ident: TurnIdentity, runner_id: uuid.UUID, *, max_concurrent: int | None = None
    ) -> Mapping[str, Any] | None:
        """Make the session's oldest queued turn running here, with its user message; None when there
        is none, the session already has an active turn, or (`max_concurrent`) the tenant has no free
        concurrency slot. `ident.turn_id` is ignored."""
        params = {"in_tenant": ident.tenant_id, "in_session": ident.session_id, "to_runner": runner_id, "now": utcnow()}
        query = PROMOTE
        if max_concurrent is not None:
            query, params = SLOTTED_PROMOTE, {**params, **slot_params(max_concurrent)}
        try:
            async with self.sql.transaction() as tx:
                row = await tx.fetchrow(query, params)
                if row is None:
                    return None
                started = TurnIdentity(ident.tenant_id, ident.session_id, row["id"], ident.agent_id)
                attachments = tuple(Attachment(**a) for a in row["attachments"] or ())
                message = message_row(started, ChatMessage(role="user", content=row["input"], attachments=attachments))
                await insert_rows(tx, MESSAGES, [message])
        except INTEGRITY_ERRORS:
            return None
        return row

    async def active_turn(self, tenant_id: str, session_id: uuid.UUID) -> uuid.UUID | None:
        value: uuid.UUID | None = await self.sql.fetchval(
            ACTIVE_TURN, {"tenant_id": tenant_id, "session_id": session_id}
        )
        return value

    async def active(self, tenant_id: str, session_id: uuid.UUID) -> Mapping[str, Any] | None:
        """The session's active turn (`id`, `status`), if it has one."""
        return await self.sql.fetchrow(ACTIVE, {"tenant_id": tenant_id, "session_id": session_id})

    async def cancel(self, tenant_id: str, turn_id: uuid.UUID) -> bool:
        """Cancel one queued turn; False if it is no longer queued."""
        return await self.sql.execute(CANCEL_ONE, {"in_tenant": tenant_id, "in_turn": turn_id, "now": utcnow()}) > 0

    async def cancel_queued(self, tenant_id: str, session_id: uuid.UUID) -> list[uuid.UUID]:
        params = {"in_tenant": tenant_id, "in_session": session_id, "now": utcnow()}
        rows = await self.sql.fetch(CANCEL_QUEUED, params)
        return [row["id"] for row in rows]

    async def stalled(self, limit: int = 50) -> list[tuple[str, uuid.UUID]]:
        return [(row["tenant_id"], row["session_id"]) for row in await self.sql.fetch(STALLED, {"limit": limit})]
