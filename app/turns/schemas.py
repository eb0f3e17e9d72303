from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from app.runtime.port.events import ErrorInfo, TurnStatus, Usage
from app.structured.schema import OutputSchema

Channel = Literal["api", "mcp", "a2a"]
"""The door a turn came through: the REST API (and its stream adapters), the MCP server or the A2A server."""

__all__ = [
    "Channel",
    "ErrorInfo",
    "Turn",
    "TurnCreate",
    "TurnLimits",
    "TurnPage",
    "TurnRegenerate",
    "TurnStatus",
    "Usage",
]


class TurnLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_loops: StrictInt | None = Field(default=None, ge=1, le=100)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=10_000_000)
    max_total_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000_000)
    max_steps: StrictInt | None = Field(default=None, ge=1, le=100)


MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]


MAX_PARTS = 20


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: str = Field(min_length=1, max_length=200_000)


class ImagePart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["image"]
    file_id: uuid.UUID = Field(description="An uploaded image (`POST /files`)")


class FilePart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["file"]
    file_id: uuid.UUID = Field(description="An uploaded file (`POST /files`): a PDF or a text file")


InputPart = Annotated[TextPart | ImagePart | FilePart, Field(discriminator="type")]


class TurnCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: (
        Annotated[str, Field(min_length=1, max_length=200_000)]
        | Annotated[list[InputPart], Field(min_length=1, max_length=MAX_PARTS)]
    ) = Field(description="Text, or a list of parts: text, and images and files uploaded through `POST /files`")
    mode: Literal["interactive", "autonomous"] = "interactive"
    limits: TurnLimits | None = None
    output_schema: OutputSchema | None = Field(
        default=None, description="For this turn, in place of the agent's `output_schema`"
    )
    multitask_strategy: MultitaskStrategy = Field(
        default="reject",
        description=(
            "What to do when the session already has an active turn: `reject` (409), `enqueue` (status "
            "`queued`, starts when the session is idle), `interrupt` (cancel the active turn, keeping its "
            "messages, then start), `rollback` (cancel it and remove its messages from the history, then start). "
            "`interrupt` and `rollback` also cancel turns still queued."
        ),
    )

    def text(self) -> str:
        """The input's text (its text parts, one after the other)."""
        if isinstance(self.input, str):
            return self.input
        return "\n\n".join(p.text for p in self.input if isinstance(p, TextPart))

    def file_parts(self) -> list[ImagePart | FilePart]:
        return [] if isinstance(self.input, str) else [p for p in self.input if not isinstance(p, TextPart)]


class TurnRegenerate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: str | None = Field(
        default=None, min_length=1, max_length=200_000, description="The new turn's input (default: the same input)"
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
    channel: Channel = Field(default="api", description="The door the turn came through: REST, MCP or A2A")
    input: str
    final_output: str | None
    output: dict[str, Any] | None = Field(
        default=None, description="The final answer parsed and validated against the turn's output schema"
    )
    usage: Usage
    loop_count: int
    max_loops: int
    error: ErrorInfo | None
    last_seq: int
    resumed_by: uuid.UUID | None
    supersedes_turn_id: uuid.UUID | None = Field(
        default=None, description="The turn this one regenerated (its messages are superseded)"
    )
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
            channel=row.channel,
            plan=plan,
            input=row.input,
            final_output=row.final_output,
            output=row.output,
            usage=Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens),
            loop_count=row.loop_count,
            max_loops=row.max_loops,
            error=row.error,
            last_seq=row.last_seq,
            resumed_by=row.resumed_by,
            supersedes_turn_id=row.supersedes_turn_id,
            created_at=row.created_at,
            ended_at=row.ended_at,
        )


class TurnPage(BaseModel):
    items: list[Turn]
    next_cursor: str | None = None


class StreamToken(BaseModel):
    token: str
    expires_in: int = Field(description="Seconds the token stays valid (at most 60)")
