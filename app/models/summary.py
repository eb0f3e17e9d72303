from __future__ import annotations

import uuid

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class Summary(IdMixin, TenantMixin, CreatedMixin, Base):
    """A compaction of a session's history: `content` stands for messages `first_message_id`..`last_message_id`.

    The newest summary of a session (highest `last_message_id`) replaces every message up to its
    `last_message_id` in later prompts; the next compaction summarises it together with what followed,
    so its range starts where the session does.
    """

    __tablename__ = "summaries"
    __table_args__ = (Index("ix_summaries_session_last", "session_id", "last_message_id"),)

    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    first_message_id: Mapped[int] = mapped_column(BigInteger)
    last_message_id: Mapped[int] = mapped_column(BigInteger)
    message_count: Mapped[int] = mapped_column(Integer)
    """How many messages it stands for: the session's first ones, up to `last_message_id`."""
    model_calls: Mapped[int] = mapped_column(Integer)
    """Summarisation calls the session has made up to and including this one."""
    content: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int] = mapped_column(Integer)
    """The summary's own size in the provider's tokens (estimated)."""
