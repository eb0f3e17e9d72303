from __future__ import annotations

import unicodedata
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field, field_validator

from app.agents.config import ConfigDocument
from app.core.bounds import INT64_MAX, Version
from app.models.session import TITLE_MAX

SessionStatus = Literal["open", "closed", "expired"]


def _printable(value: str) -> str:
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValueError("external_id must not contain control characters")
    return value


ExternalId = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_printable)]


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: uuid.UUID
    agent_version: Version | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    external_id: ExternalId | None = None
    """The caller's own id for the conversation: get-or-create per (tenant, owner, agent, external_id)."""


class SessionFork(BaseModel):
    model_config = ConfigDict(extra="forbid")
    at_message_id: int | None = Field(
        default=None, ge=1, le=INT64_MAX,
        description="The last message the fork keeps (a user or an assistant message; an assistant message keeps "
        "its tool results). Omitted: the whole history.",
    )  # fmt: skip
    agent_version: Version | None = Field(default=None, description="The fork's pin (default: the origin's)")
    external_id: ExternalId | None = Field(default=None, description="The fork's own external_id (none by default)")


class ForkedFrom(BaseModel):
    session_id: uuid.UUID
    message_id: int | None = Field(description="The origin's last kept message (null: its history was empty)")


class SessionUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=TITLE_MAX)
    """Shown in session lists; one line, no control characters."""

    @field_validator("title")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("title must not be blank")
        if any(unicodedata.category(ch) == "Cc" for ch in value):
            raise ValueError("title must be one line without control characters")
        return value


class Session(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    agent_id: uuid.UUID
    agent_version: int
    owner: str = Field(validation_alias="owner_sub")
    status: SessionStatus
    external_id: str | None = None
    title: str | None = Field(
        default=None, description="The first user message's opening until renamed with PATCH; null before it"
    )
    snapshot: ConfigDocument
    metadata: dict[str, Any] = Field(validation_alias="meta")
    created_at: datetime
    last_active_at: datetime
    closed_at: datetime | None
    forks: list[uuid.UUID] = Field(default_factory=list, description="Sessions forked from this one")
    forked_from_session_id: uuid.UUID | None = Field(default=None, exclude=True)
    forked_from_message_id: int | None = Field(default=None, exclude=True)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def forked_from(self) -> ForkedFrom | None:
        """The session and the last message of it this one was forked at (null: not a fork)."""
        if self.forked_from_session_id is None:
            return None
        return ForkedFrom(session_id=self.forked_from_session_id, message_id=self.forked_from_message_id)


class MessageOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    turn_id: uuid.UUID
    role: Literal["user", "assistant", "tool"]
    content: str
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    attachments: list[dict[str, Any]] | None = Field(
        default=None, description="A user message's files as references: file_id, kind, name, content_type, size"
    )
    superseded_by_turn_id: uuid.UUID | None = Field(
        default=None, description="The turn that regenerated this message's turn (listed with ?include=superseded)"
    )
    created_at: datetime


class MessagePage(BaseModel):
    items: list[MessageOut]
    next_cursor: str | None = None
