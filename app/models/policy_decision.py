from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class PolicyDecision(IdMixin, TenantMixin, CreatedMixin, Base):
    """A receipt of one policy decision, with the hash of the policy set that made it."""

    __tablename__ = "policy_decisions"
    __table_args__ = (Index("ix_policy_decisions_turn_created", "turn_id", "created_at"),)

    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"))
    point: Mapped[str] = mapped_column(String(16))
    tool_call_id: Mapped[str | None] = mapped_column(String(128))
    tool_name: Mapped[str | None] = mapped_column(String(256))
    verdict: Mapped[str] = mapped_column(String(24))
    rule_id: Mapped[str | None] = mapped_column(String(128))
    reason: Mapped[str | None] = mapped_column(Text)
    policy_hash: Mapped[str] = mapped_column(String(64))
    decided_by: Mapped[str | None] = mapped_column(String(256))
    """Point `human`: who approved or denied; with the hashes of the arguments seen and, if edited, run."""
    arguments_sha256: Mapped[str | None] = mapped_column(String(64))
    edited_arguments_sha256: Mapped[str | None] = mapped_column(String(64))
    detector: Mapped[str | None] = mapped_column(String(32))
    """Points `output` and `tool_result`: the detector (or `regex`) that matched and how often; never the text."""
    match_count: Mapped[int | None] = mapped_column(Integer)
