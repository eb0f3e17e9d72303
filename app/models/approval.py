from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime


class Approval(IdMixin, TenantMixin, CreatedMixin, Base):
    """A gated tool call waiting for (or decided by) a human."""

    __tablename__ = "approvals"
    __table_args__ = (
        UniqueConstraint("turn_id", "tool_call_id"),
        Index("ix_approvals_tenant_status", "tenant_id", "status", "created_at"),
        Index("ix_approvals_session_id", "session_id"),
    )

    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"))
    owner_sub: Mapped[str] = mapped_column(String(256))
    loop: Mapped[int] = mapped_column(Integer)
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool_name: Mapped[str] = mapped_column(String(256))
    arguments: Mapped[dict[str, Any]]
    arguments_hash: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    rule_id: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    decision_reason: Mapped[str | None] = mapped_column(Text)
    edited_arguments: Mapped[dict[str, Any] | None]
    decided_by: Mapped[str | None] = mapped_column(String(256))
    decided_channel: Mapped[str | None] = mapped_column(String(16))
    """The door the decision came through (`api`, `mcp`, `a2a`)."""
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    result: Mapped[str | None] = mapped_column(Text)
    """A `tool_result` approval: the result the human approves into the prompt (the call already ran)."""
