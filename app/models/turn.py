from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, Uuid, false, text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow

ACTIVE_STATUSES = ("running", "interrupted")
_ACTIVE_WHERE = text("status IN ('running', 'interrupted')")
_RUNNING_WHERE = text("status = 'running' AND concurrency_slot IS NOT NULL")
_RUNNING = text("status = 'running'")


class Turn(IdMixin, TenantMixin, CreatedMixin, Base):
    __tablename__ = "turns"
    __table_args__ = (
        Index("ix_turns_session_created", "session_id", "created_at"),
        Index("ix_turns_status", "status"),
        Index(
            "uq_turns_running_slot",
            "tenant_id",
            "concurrency_slot",
            unique=True,
            postgresql_where=_RUNNING_WHERE,
            sqlite_where=_RUNNING_WHERE,
        ),
        Index("uq_turns_supersedes", "supersedes_turn_id", unique=True),
        Index("ix_turns_running_runner", "runner_id", postgresql_where=_RUNNING, sqlite_where=_RUNNING),
        Index(
            "uq_turns_one_active_per_session",
            "session_id",
            unique=True,
            postgresql_where=_ACTIVE_WHERE,
            sqlite_where=_ACTIVE_WHERE,
        ),
    )

    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(24), default="running")
    input: Mapped[str] = mapped_column(Text)
    final_output: Mapped[str | None] = mapped_column(Text)
    error: Mapped[dict[str, Any] | None]
    output_schema: Mapped[dict[str, Any] | None]
    """The schema the final answer must meet: the turn request's, else the agent's (app/structured)."""
    output: Mapped[dict[str, Any] | None]
    attachments: Mapped[list[Any] | None]
    """A queued turn's file references, for the user message written when it starts."""
    """The final answer parsed and validated against `output_schema`."""
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    loop_count: Mapped[int] = mapped_column(Integer, default=0)
    max_loops: Mapped[int] = mapped_column(Integer)
    max_output_tokens: Mapped[int] = mapped_column(Integer)
    max_total_tokens: Mapped[int | None] = mapped_column(BigInteger)
    concurrency_slot: Mapped[int | None] = mapped_column(Integer)
    """One of the tenant's `max_concurrent_turns` places, held while `running` (app/runtime/store/admission.py)."""
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    seq_ceiling: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The highest event seq a live run may have shown any client (reserved in blocks with its writes,
    app/runtime/stream.py): a continuation numbers its events above it, so no id is ever reused."""
    handed_over: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Released by a draining replica for another to continue at once (reason `shutdown`)."""
    mode: Mapped[str] = mapped_column(String(16), default="interactive", server_default="interactive")
    """`interactive` or `autonomous` (PLAN / PURSUE, app/autonomy); the plan is rebuilt from its events."""
    max_steps: Mapped[int | None] = mapped_column(Integer)
    channel: Mapped[str] = mapped_column(String(16), default="api", server_default="api")
    """The door the turn came through: `api` (REST and the stream adapters), `mcp` or `a2a` (app/interop)."""
    owner_sub: Mapped[str] = mapped_column(String(256))
    resumed_by: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    supersedes_turn_id: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    """The turn this one regenerated (POST /turns/{id}/regenerate); unique: a turn is regenerated once."""
    runner_id: Mapped[uuid.UUID | None] = mapped_column(Uuid())
    """The process running the turn now; its heartbeat in `runners` is the lease (see turns.lease)."""
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
