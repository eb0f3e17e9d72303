"""Session creation on the hot path: one statement that pins the agent version and inserts the session.

Every benchmarked conversation starts with `POST /sessions`; the ORM unit of work (read the agent
and its version, INSERT, COMMIT) costs several round trips and most of its CPU in SQLAlchemy. When
the statement inserts nothing (unknown agent or version, archived agent) the ORM path runs instead
and answers with the precise error.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Integer, Table, and_, bindparam, func, insert, literal, select

from app.core.sql import Query, Sql, bare
from app.models import Agent, AgentVersion, Session
from app.models.base import utcnow

SESSIONS: Table = Session.__table__  # type: ignore[assignment]


def _create_pinned() -> Query:
    sessions = bare(SESSIONS)
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
            bindparam("now", type_=sessions.c.created_at.type),
            bindparam("now", type_=sessions.c.created_at.type),
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
    columns = ["id", "tenant_id", "agent_id", "agent_version", "owner_sub", "snapshot", "metadata", "status",
               "created_at", "updated_at"]  # fmt: skip
    returning = [*(sessions.c[c] for c in columns if c != "metadata"), sessions.c.metadata.label("meta"),
                 sessions.c.closed_at]  # fmt: skip
    return Query(insert(sessions).from_select(columns, pinned).returning(*returning))


CREATE_PINNED = _create_pinned()


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
    params = {
        "id": session_id or uuid.uuid4(), "tenant_id": tenant_id, "agent_id": agent_id, "version": version,
        "owner_sub": owner_sub, "metadata": metadata, "now": utcnow(),
    }  # fmt: skip
    return await sql.fetchrow(CREATE_PINNED, params)
