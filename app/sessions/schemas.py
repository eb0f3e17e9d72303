from __future__ import annotations

import unicodedata
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.agents.config import ConfigDocument
from app.core.bounds import Version

SessionStatus = Literal["open", "closed", "expired"]


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: uuid.UUID
    agent_version: Version | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    external_id: str | None = Field(default=None, min_length=1, max_length=256)
    """The caller's own id for the conversation: get-or-create per (tenant, owner, agent, external_id)."""

    @field_validator("external_id")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and any(unicodedata.category(ch) == "Cc" for ch in value):
            raise ValueError("external_id must not contain control characters")
        return value


class Session(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    agent_id: uuid.UUID
    agent_version: int
    owner: str = Field(validation_alias="owner_sub")
    status: SessionStatus
    external_id: str | None = None
    snapshot: ConfigDocument
    metadata: dict[str, Any] = Field(validation_alias="meta")
    created_at: datetime
    last_active_at: datetime
    closed_at: datetime | None


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
    created_at: datetime


class MessagePage(BaseModel):
    items: list[MessageOut]
    next_cursor: str | None = None
