from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow


class Agent(IdMixin, TenantMixin, CreatedMixin, Base):
    __tablename__ = "agents"
    __table_args__ = (Index("ix_agents_tenant_created", "tenant_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    current_version: Mapped[int] = mapped_column(Integer, default=1)
    created_by: Mapped[str] = mapped_column(String(256))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
    archived_at: Mapped[datetime | None] = mapped_column(UtcDateTime())

    @property
    def agent_id(self) -> uuid.UUID:
        return self.id
