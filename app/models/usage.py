from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class Usage(IdMixin, TenantMixin, CreatedMixin, Base):
    """Token usage of one model call."""

    __tablename__ = "usage"
    __table_args__ = (Index("ix_usage_tenant_created", "tenant_id", "created_at"),)

    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    model: Mapped[str] = mapped_column(String(128))
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16), default="model", server_default=text("'model'"))
    """`model`, `compaction` or `plan` (DESIGN.md "Events": `usage.kind`)."""
