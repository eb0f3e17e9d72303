from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class ToolExecution(IdMixin, TenantMixin, CreatedMixin, Base):
    """The ledger of tool calls: one row per idempotency key, never two.

    `dispatched` (no result yet) is written before a call leaves the service, `completed` with its
    result after: a row still `dispatched` after a crash names a call that may have run, which a
    continuation re-sends under the same key (the MCP gateway deduplicates on it).
    """

    __tablename__ = "tool_executions"

    idempotency_key: Mapped[str] = mapped_column(String(64), unique=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    loop: Mapped[int] = mapped_column(Integer)
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool_name: Mapped[str] = mapped_column(String(256))
    arguments: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), default="completed", server_default="completed")
    result: Mapped[str | None] = mapped_column(Text)
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
