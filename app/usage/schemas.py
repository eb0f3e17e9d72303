from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

GroupKey = Literal["day", "agent", "model", "user", "channel"]


class TokenQuota(BaseModel):
    model_config = ConfigDict(extra="forbid")
    period: Literal["day", "month"]
    tokens: StrictInt = Field(ge=1, le=10**15)


class TenantCeilingsUpdate(BaseModel):
    """The tenant's ceilings, replaced as a whole; a missing or null field is no ceiling."""

    model_config = ConfigDict(extra="forbid")
    max_loops: StrictInt | None = Field(default=None, ge=1, le=100)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=10_000_000)
    max_total_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000_000)
    max_concurrent_turns: StrictInt | None = Field(default=None, ge=1, le=10_000)
    token_quota: TokenQuota | None = None


class TenantCeilings(TenantCeilingsUpdate):
    updated_by: str | None = None
    updated_at: datetime | None = None


class UsageTotals(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    calls: int


class UsageGroup(UsageTotals):
    """One group's totals; the keys not grouped by are null."""

    day: date | None = None
    agent_id: uuid.UUID | None = None
    model: str | None = None
    user: str | None = None
    channel: str | None = Field(default=None, description="The door of the turns: api, mcp or a2a")


class QuotaState(BaseModel):
    period: Literal["day", "month"]
    tokens: int
    period_start: datetime
    period_end: datetime
    used: int
    reserved: int
    left: int


class UsageReport(BaseModel):
    from_: datetime = Field(serialization_alias="from")
    to: datetime
    group_by: list[GroupKey]
    scope: Literal["tenant", "own"]
    """`tenant` for an admin, `own` (the caller's sessions) otherwise."""
    totals: UsageTotals
    items: list[UsageGroup]
    quota: QuotaState | None
    """The tenant's quota in the current period (shared by every user of the tenant), or null."""
