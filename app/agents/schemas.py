from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from app.agents.config import AgentConfig, ConfigDocument

ConfigPatch = Annotated[
    dict[str, Any],
    WithJsonSchema(
        {
            "title": "AgentConfigPatch",
            "type": "object",
            "additionalProperties": True,
            "description": "A JSON Merge Patch (RFC 7396) on the current configuration: members present replace "
            "(objects merge), `null` removes; lists are replaced whole.",
        }
    ),
]


class AgentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=5000)
    config: AgentConfig


class AgentUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=5000)
    config: ConfigPatch | None = None


class Agent(BaseModel):
    id: uuid.UUID
    name: str
    description: str | None
    version: int
    config: ConfigDocument
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None


class AgentVersion(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    agent_id: uuid.UUID
    version: int
    config: ConfigDocument
    created_at: datetime
    created_by: str
