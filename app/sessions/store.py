"""Session creation on the hot path: one statement that pins the agent version and inserts the session.

Every benchmarked conversation starts with `POST /sessions`; the ORM unit of work (read the agent
and its version, INSERT, COMMIT) costs several round trips and most of its CPU in SQLAlchemy. When
the statement inserts nothing (unknown agent or version, archived agent) the ORM path runs instead
and answers with the precise error.

With an `external_id` the insert does nothing on a conflict with the unique index on (tenant, owner,
agent, external_id) and the existing session is read instead: concurrent first sends with the same
id all get the one session, whoever inserted it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Insert, Integer, Table, and_, bindparam, func, insert, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.core.sql import Query, Sql, bare
from app.models import Agent, AgentVersion, Session
from app.models.base import utcnow

SESSIONS: Table = Session.__table__  # type: ignore[assignment]
_COLUMNS = ["id", "tenant_id", "agent_id", "agent_version", "owner_sub", "snapshot", "metadata", "status",
            "external_id", "created_at", "updated_at", "last_active_at"]  # fmt: skip
_RETURNED = [c for c in _COLUMNS if c != "metadata"] + [
    "closed_at",
    "title",
    "forked_from_session_id",
    "forked_from_message_id",
]
_EXTERNAL_KEY = ["tenant_id", "owner_sub", "agent_id", "external_id"]


def _pinned_insert(insert_into: Any) -> Any:
    """`insert_into(sessions).from_select(...)`: the generic or a dialect's insert (for ON CONFLICT)."""
    sessions = bare(SESSIONS)
    now = bindparam("now", type_=sessions.c.created_at.type)
    pinned = (
        select(
            bindparam("id", type_=sessions.c.id.type),
            Agent.tenant_id,
            Agent.id,
            AgentVersion.version,
            bindparam("owner_sub", type_=sessions.c.owner_sub.type),
            AgentVersion.config,
            bindparam("metadata", type_=sessions.c.metadata.type),
            literal("open"),
            bindparam("external_id", type_=sessions.c.external_id.type),
            now,
            now,
            now,
        )
        .join(
            AgentVersion,
            and_(
                AgentVersion.agent_id == Agent.id,
                AgentVersion.version == func.coalesce(bindparam("version", type_=Integer), Agent.current_version),
            ),
        )
        .where(
            Agent.tenant_id == bindparam("tenant_id"), Agent.id == bindparam("agent_id"), Agent.archived_at.is_(None)
        )
    )
    return insert_into(sessions).from_select(_COLUMNS, pinned)


def _returning(statement: Insert) -> Query:
    sessions = bare(SESSIONS)
    return Query(statement.returning(*(sessions.c[c] for c in _RETURNED), sessions.c.metadata.label("meta")))


CREATE_PINNED = _returning(_pinned_insert(insert))
CREATE_PINNED_UNLESS_KNOWN = {
    name: _returning(_pinned_insert(dialect_insert).on_conflict_do_nothing(index_elements=_EXTERNAL_KEY))
    for name, dialect_insert in (("postgresql", pg_insert), ("sqlite", sqlite_insert))
}
BY_EXTERNAL_ID = Query(
    select(*(SESSIONS.c[c] for c in _RETURNED), SESSIONS.c.metadata.label("meta")).where(
        *(SESSIONS.c[c] == bindparam(c) for c in _EXTERNAL_KEY)
    )
)


async def create_pinned(
    sql: Sql,
    *,
    tenant_id: str,
    owner_sub: str,
    agent_id: uuid.UUID,
    version: int | None,
    metadata: dict[str, Any],
    session_id: uuid.UUID | None = None,
) -> Mapping[str, Any] | None:
    """The new session, or None if the tenant has no open agent with that version."""
    params = _params(tenant_id, owner_sub, agent_id, version, metadata, None, session_id)
    return await sql.fetchrow(CREATE_PINNED, params)


async def get_or_create_pinned(
    sql: Sql, *, tenant_id: str, owner_sub: str, agent_id: uuid.UUID, version: int | None,
    metadata: dict[str, Any], external_id: str,
) -> tuple[Mapping[str, Any] | None, bool]:  # fmt: skip
    """(the session, created?): the caller's session with this external id, made now if it had none.

    (None, False) when there is none and the tenant has no open agent with that version.
    """
    params = _params(tenant_id, owner_sub, agent_id, version, metadata, external_id, None)
    created = await sql.fetchrow(CREATE_PINNED_UNLESS_KNOWN[sql.dialect], params)
    if created is not None:
        return created, True
    key = {"tenant_id": tenant_id, "owner_sub": owner_sub, "agent_id": agent_id, "external_id": external_id}
    return await sql.fetchrow(BY_EXTERNAL_ID, key), False


def _params(
    tenant_id: str, owner_sub: str, agent_id: uuid.UUID, version: int | None, metadata: dict[str, Any],
    external_id: str | None, session_id: uuid.UUID | None,
) -> dict[str, Any]:  # fmt: skip
    return {
        "id": session_id or uuid.uuid4(), "tenant_id": tenant_id, "agent_id": agent_id, "version": version,
        "owner_sub": owner_sub, "metadata": metadata, "external_id": external_id, "now": utcnow(),
    }  # fmt: skip
