from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from app.runtime.port.events import ErrorInfo, TurnStatus, Usage

__all__ = ["ErrorInfo", "Turn", "TurnCreate", "TurnLimits", "TurnPage", "TurnStatus", "Usage"]


class TurnLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_loops: StrictInt | None = Field(default=None, ge=1, le=100)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=10_000_000)
    max_total_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000_000)
    max_steps: StrictInt | None = Field(default=None, ge=1, le=100)


MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]


class TurnCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: str = Field(min_length=1, max_length=200_000)
    mode: Literal["interactive", "autonomous"] = "interactive"
    limits: TurnLimits | None = None
    multitask_strategy: MultitaskStrategy = Field(
        default="reject",
        description=(
            "What to do when the session already has an active turn: `reject` (409), `enqueue` (status "
            "`queued`, starts when the session is idle), `interrupt` (cancel the active turn, keeping its "
            "messages, then start), `rollback` (cancel it and remove its messages from the history, then start). "
            "`interrupt` and `rollback` also cancel turns still queued."
        ),
    )


class PlanItem(BaseModel):
    """One todo of an autonomous turn's plan and where it stands."""

    id: str
    title: str
    status: Literal["pending", "running", "done", "failed", "skipped"]
    output: str


class Turn(BaseModel):
    id: uuid.UUID
    session_id: uuid.UUID
    status: TurnStatus
    mode: Literal["interactive", "autonomous"] = "interactive"
    input: str
    final_output: str | None
    usage: Usage
    loop_count: int
    max_loops: int
    error: ErrorInfo | None
    last_seq: int
    resumed_by: uuid.UUID | None
    created_at: datetime
    ended_at: datetime | None
    plan: list[PlanItem] | None = Field(
        default=None, description="An autonomous turn's todos with their status (null for an interactive turn)"
    )

    @classmethod
    def of(cls, row: Any, plan: list[PlanItem] | None = None) -> Turn:
        return cls(
            id=row.id,
            session_id=row.session_id,
            status=row.status,
            mode=row.mode,
            plan=plan,
            input=row.input,
            final_output=row.final_output,
            usage=Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens),
            loop_count=row.loop_count,
            max_loops=row.max_loops,
            error=row.error,
            last_seq=row.last_seq,
            resumed_by=row.resumed_by,
            created_at=row.created_at,
            ended_at=row.ended_at,
        )


class TurnPage(BaseModel):
    items: list[Turn]
    next_cursor: str | None = None


class StreamToken(BaseModel):
    token: str
    expires_in: int = Field(description="Seconds the token stays valid (at most 60)")
