from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from app.governance.policy import PolicyRule, PolicyRuleList


class TenantPoliciesUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    policies: PolicyRuleList = Field(max_length=500)


class TenantPolicies(BaseModel):
    version: int
    policies: list[PolicyRule]
    policy_hash: str
    created_by: str | None
    created_at: datetime | None


class DecisionReceipt(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    turn_id: uuid.UUID
    point: str
    tool_call_id: str | None
    tool_name: str | None
    verdict: str
    rule_id: str | None
    reason: str | None
    policy_hash: str
    decided_by: str | None = None
    arguments_sha256: str | None = None
    edited_arguments_sha256: str | None = None
    detector: str | None = None
    """Points `output` and `tool_result`: what matched (a detector's name, or `regex`), never the text."""
    match_count: int | None = None
    created_at: datetime


class DecisionPage(BaseModel):
    items: list[DecisionReceipt]
    next_cursor: str | None = None
