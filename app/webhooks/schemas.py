from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

EventType = Annotated[str, StringConstraints(pattern=r"^[a-z_]+(\.[a-z_]+)+$", max_length=40)]


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2048, description="http(s) URL that receives a POST per event")
    events: list[EventType] = Field(
        min_length=1, max_length=32, description='event types to deliver, e.g. ["turn.ended", "approval.required"]'
    )
    secret: str | None = Field(
        default=None,
        max_length=128,
        description="`whsec_` + base64 of 24–64 bytes; generated when absent. Returned once, in this response.",
    )


class Webhook(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    url: str
    events: list[str]
    created_by: str
    created_at: datetime


class WebhookCreated(Webhook):
    secret: str = Field(description="The signing secret. Shown only in this response: store it now.")


class Delivery(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID = Field(description="Also the `webhook-id` header of every attempt (receivers dedupe on it)")
    event_type: str
    turn_id: uuid.UUID
    seq: int
    status: str = Field(description="`pending`, `delivered`, or `failed` (retry window over)")
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    response_status: int | None
    last_error: str | None = Field(description="Why the latest failed attempt failed (kept after a later success)")
    created_at: datetime
    delivered_at: datetime | None
