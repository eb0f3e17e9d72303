from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow


class Schedule(IdMixin, TenantMixin, CreatedMixin, Base):
    """A cron schedule that runs an agent with a fixed input, as its owner, on every tick."""

    __tablename__ = "schedules"
    __table_args__ = (Index("ix_schedules_due", "enabled", "next_fire_at"),)

    owner_sub: Mapped[str] = mapped_column(String(256))
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    cron: Mapped[str] = mapped_column(String(128))
    timezone: Mapped[str] = mapped_column(String(64))
    input: Mapped[str] = mapped_column(Text)
    session_id: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    """The session every firing runs in; None: a new session per firing."""
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(256))
    """Why the service turned the schedule off (its agent was archived); None when enabled or turned off by a user."""
    next_fire_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_fired_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class ScheduleFiring(IdMixin, TenantMixin, CreatedMixin, Base):
    """One tick of a schedule. The unique (schedule, tick) makes a tick fire once across replicas;
    the turn and session ids are chosen when the tick is claimed, so starting the turn is idempotent."""

    __tablename__ = "schedule_firings"
    __table_args__ = (
        UniqueConstraint("schedule_id", "scheduled_for"),
        Index("ix_schedule_firings_pending", "started"),
    )

    schedule_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("schedules.id", ondelete="CASCADE"))
    scheduled_for: Mapped[datetime] = mapped_column(UtcDateTime())
    session_id: Mapped[uuid.UUID] = mapped_column(Uuid())
    turn_id: Mapped[uuid.UUID] = mapped_column(Uuid())
    started: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)
