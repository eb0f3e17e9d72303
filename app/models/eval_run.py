from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow


class EvalRun(IdMixin, TenantMixin, CreatedMixin, Base):
    """One run of a dataset against an agent version (and optionally a baseline version)."""

    __tablename__ = "eval_runs"
    __table_args__ = (Index("ix_eval_runs_status", "status"),)

    owner_sub: Mapped[str] = mapped_column(String(256))
    dataset_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    agent_version: Mapped[int] = mapped_column(Integer)
    baseline_version: Mapped[int | None] = mapped_column(Integer)
    tools: Mapped[str] = mapped_column(String(16))
    concurrency: Mapped[int] = mapped_column(Integer, default=4)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    """`queued`, `running`, `completed`, `cancelled` or `failed`."""
    total: Mapped[int] = mapped_column(Integer, default=0)
    runner_id: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    """The process running it; a run whose runner's lease lapsed is continued by another."""
    error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class EvalResult(IdMixin, TenantMixin, CreatedMixin, Base):
    """One item run on one version: its turn, and the scores of its checks once it ended."""

    __tablename__ = "eval_results"
    __table_args__ = (UniqueConstraint("eval_id", "item_id", "agent_version"),)

    eval_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("eval_runs.id", ondelete="CASCADE"), index=True)
    item_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("dataset_items.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    agent_version: Mapped[int] = mapped_column(Integer)
    session_id: Mapped[uuid.UUID] = mapped_column(Uuid())
    turn_id: Mapped[uuid.UUID] = mapped_column(Uuid())
    """Chosen when the result row is made, so starting its turn again finds the same turn."""
    status: Mapped[str] = mapped_column(String(16), default="pending")
    """`pending`, `scored` or `cancelled`."""
    turn_status: Mapped[str | None] = mapped_column(String(24))
    scores: Mapped[list[Any]] = mapped_column(default=list)
    score: Mapped[float | None] = mapped_column(Float)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
