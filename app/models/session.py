from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow


class Session(IdMixin, TenantMixin, CreatedMixin, Base):
    """A conversation pinned to one agent version; `snapshot` is that version's config."""

    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_tenant_owner_created", "tenant_id", "owner_sub", "created_at", "id"),
        Index("ix_sessions_agent_id", "agent_id"),
    )

    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="RESTRICT"))
    agent_version: Mapped[int] = mapped_column(Integer)
    owner_sub: Mapped[str] = mapped_column(String(256))
    snapshot: Mapped[dict[str, Any]]
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    status: Mapped[str] = mapped_column(String(16), default="open")
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
