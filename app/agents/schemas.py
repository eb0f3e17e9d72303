from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.agents.config import AgentConfig


class AgentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=5000)
    config: AgentConfig


class AgentUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=5000)
    config: AgentConfig | None = None


class Agent(BaseModel):
    id: uuid.UUID
    name: str
    description: str | None
    version: int
    config: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None


class AgentVersion(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    agent_id: uuid.UUID
    version: int
    config: dict[str, Any]
    created_at: datetime
    created_by: str
