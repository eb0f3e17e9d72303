from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ApprovalStatus = Literal["pending", "approved", "denied", "expired"]


class Approval(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    session_id: uuid.UUID
    turn_id: uuid.UUID
    tool_call_id: str
    name: str = Field(validation_alias="tool_name")
    arguments: dict[str, Any]
    arguments_hash: str
    reason: str | None
    rule_id: str | None
    status: ApprovalStatus
    decision_reason: str | None
    edited_arguments: dict[str, Any] | None
    decided_by: str | None
    decided_channel: str | None = None
    decided_at: datetime | None
    created_at: datetime
    result: str | None = None
    """A `tool_result` rule's approval: the call ran; approving lets this result into the prompt."""


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decision: Literal["approve", "deny"]
    reason: str | None = Field(default=None, max_length=5000)
    arguments: dict[str, Any] | None = Field(default=None, description="Edited arguments for an approval")


class BatchDecisionItem(ApprovalDecision):
    approval_id: uuid.UUID


class BatchDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decisions: list[BatchDecisionItem] = Field(min_length=1, max_length=100)


class ApprovalPage(BaseModel):
    items: list[Approval]
    next_cursor: str | None = None


class StillWaiting(BaseModel):
    """A decision was recorded, but other approvals of the same batch still wait for a human."""

    turn_id: uuid.UUID
    pending: list[Approval]
