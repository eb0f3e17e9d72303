from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool


class ScheduleCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: uuid.UUID
    cron: str = Field(min_length=1, max_length=128, examples=["0 9 * * 1-5"])
    timezone: str = Field(default="UTC", min_length=1, max_length=64, examples=["Europe/Berlin"])
    input: str = Field(min_length=1, max_length=100_000)
    session: Literal["new"] | uuid.UUID = "new"
    """`new`: every firing starts a session of its own; or the id of one of your sessions of this agent."""
    enabled: StrictBool = True


class ScheduleOut(BaseModel):
    id: uuid.UUID
    agent_id: uuid.UUID
    owner: str
    cron: str
    timezone: str
    input: str
    session: Literal["new"] | uuid.UUID
    enabled: bool
    disabled_reason: str | None = None
    """Why the service turned the schedule off (its agent was archived)."""
    next_fire_at: datetime
    last_fired_at: datetime | None
    created_at: datetime


class SchedulePage(BaseModel):
    items: list[ScheduleOut]
    next_cursor: str | None = None


class FiringOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    scheduled_for: datetime
    session_id: uuid.UUID
    turn_id: uuid.UUID
    started: bool
    error: str | None
    created_at: datetime


class FiringPage(BaseModel):
    items: list[FiringOut]
