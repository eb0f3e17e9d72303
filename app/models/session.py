from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow

SESSION_STATUSES = ("open", "closed", "expired")
TITLE_MAX = 200
_OPEN = text("status = 'open'")
_ENDED_NOT_PURGED = text("status IN ('closed', 'expired') AND purged_at IS NULL")


class Session(IdMixin, TenantMixin, CreatedMixin, Base):
    """A conversation pinned to one agent version; `snapshot` is that version's config.

    `last_active_at` moves when a turn starts; the idle sweep reads open sessions by it, and the
    retention sweep reads ended, not yet purged sessions by `closed_at` (both partial indexes, so
    a pass costs the size of its batch, not of the table). `tenant_id` has no index of its own: the
    composite indexes lead with it, and every turn's start rewrites the row's index entries
    (migration 0028).
    """

    __tablename__ = "sessions"

    tenant_id: Mapped[str] = mapped_column(String(128))
    __table_args__ = (
        Index("ix_sessions_tenant_owner_created", "tenant_id", "owner_sub", "created_at", "id"),
        Index("ix_sessions_agent_id", "agent_id"),
        Index("ix_sessions_forked_from", "forked_from_session_id"),
        Index("uq_sessions_external_id", "tenant_id", "owner_sub", "agent_id", "external_id", unique=True),
        Index("ix_sessions_open_last_active", "last_active_at", postgresql_where=_OPEN, sqlite_where=_OPEN),
        Index(
            "ix_sessions_ended_unpurged",
            "closed_at",
            postgresql_where=_ENDED_NOT_PURGED,
            sqlite_where=_ENDED_NOT_PURGED,
        ),
    )

    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="RESTRICT"))
    agent_version: Mapped[int] = mapped_column(Integer)
    owner_sub: Mapped[str] = mapped_column(String(256))
    snapshot: Mapped[dict[str, Any]]
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    status: Mapped[str] = mapped_column(String(16), default="open")
    external_id: Mapped[str | None] = mapped_column(String(256))
    title: Mapped[str | None] = mapped_column(String(TITLE_MAX))
    """The first user message's opening (set when the first turn starts) until the owner renames it."""
    purpose: Mapped[str] = mapped_column(String(16), default="chat", server_default="chat")
    """`chat`, or `eval`: a session of an eval run (app/evals), left out of session lists."""
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
    last_active_at: Mapped[datetime] = mapped_column(
        UtcDateTime(), default=utcnow, server_default=text("CURRENT_TIMESTAMP")
    )
    """Defaults in the database too: hot-path inserts send exactly their columns (app.core.sql.bare)."""
    closed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    """When the session was closed or expired (retention counts from here)."""
    purged_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    """When retention deleted its events and messages."""
    forked_from_session_id: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    forked_from_message_id: Mapped[int | None] = mapped_column(BigInteger)
    """A fork's origin and the last message of the origin it kept (app/sessions/forks.py)."""
