from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, JsonType, TenantMixin, UtcDateTime, utcnow


class MemoryItem(IdMixin, TenantMixin, CreatedMixin, Base):
    """One long-term memory fact: a JSON value under (scope, namespace, key).

    `scope` is `user:{sub}` (facts kept for one user, across sessions and agents) or
    `agent:{agent_id}` (shared by every user of the agent). `search_text` is the key and the
    value's strings, indexed for full-text search (PostgreSQL `tsvector`, SQLite FTS5).
    """

    __tablename__ = "memory_items"
    __table_args__ = (
        UniqueConstraint("tenant_id", "scope", "namespace", "key"),
        Index("ix_memory_items_search", text("to_tsvector('simple', search_text)"), postgresql_using="gin").ddl_if(
            dialect="postgresql"
        ),
    )

    scope: Mapped[str] = mapped_column(String(300))
    namespace: Mapped[str] = mapped_column(String(64))
    key: Mapped[str] = mapped_column(String(128))
    value: Mapped[Any] = mapped_column(JsonType)
    search_text: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
