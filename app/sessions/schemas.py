from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.agents.config import ConfigDocument
from app.core.bounds import Version


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: uuid.UUID
    agent_version: Version | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Session(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    agent_id: uuid.UUID
    agent_version: int
    owner: str = Field(validation_alias="owner_sub")
    status: Literal["open", "closed"]
    snapshot: ConfigDocument
    metadata: dict[str, Any] = Field(validation_alias="meta")
    created_at: datetime
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
    created_at: datetime


class MessagePage(BaseModel):
    items: list[MessageOut]
    next_cursor: str | None = None
