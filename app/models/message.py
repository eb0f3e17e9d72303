from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, BigIntId, CreatedMixin, TenantMixin


class Message(TenantMixin, CreatedMixin, Base):
    """Conversation history in a provider-neutral shape (user, assistant, tool)."""

    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_session_id_id", "session_id", "id"),)

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text, default="")
    tool_calls: Mapped[list[Any] | None]
    tool_call_id: Mapped[str | None] = mapped_column(String(128))
    name: Mapped[str | None] = mapped_column(String(256))
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    attachments: Mapped[list[Any] | None]
    """A user message's files, as references `{file_id, kind, name, content_type, size}` (not copies)."""
    superseded_by_turn_id: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    """The turn that regenerated this message's turn: kept, but out of the history and the prompt.

    A forked session's copies keep the `turn_id` of the origin's turn that wrote them."""
