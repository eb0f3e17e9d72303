from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictInt, field_validator
from pydantic_core import PydanticCustomError

from app.governance.policy import PolicyRule, PolicyRuleList


class TenantPoliciesUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    policies: PolicyRuleList = Field(max_length=500)

    def document(self) -> list[dict[str, Any]]:
        """The rules as a tenant policy version stores them (unset fields left out)."""
        return [rule.model_dump(mode="json", exclude_none=True) for rule in self.policies]


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


SIMULATION_DEFAULT_LIMIT = 1000
SIMULATION_MAX_LIMIT = 10_000


class SimulationRequest(TenantPoliciesUpdate):
    """A draft of the tenant's policies (validated as `PUT /policies` validates them) and what to replay."""

    agent_id: uuid.UUID | None = None
    since: AwareDatetime | None = None
    """Only decisions made at or after this instant (RFC 3339 with an offset)."""
    limit: StrictInt = Field(default=SIMULATION_DEFAULT_LIMIT, ge=1, le=SIMULATION_MAX_LIMIT)

    @field_validator("since", mode="before")
    @classmethod
    def _since_is_text(cls, value: object) -> object:
        """A number would be read as a Unix time; the contract is an RFC 3339 string."""
        if value is None or isinstance(value, str):
            return value
        raise PydanticCustomError("rfc3339", "since must be an RFC 3339 date-time string")


class VerdictCount(BaseModel):
    point: str
    recorded: str
    draft: str
    count: int


class ChangedDecision(BaseModel):
    decision_id: uuid.UUID | None
    """The receipt replayed; None for a reply or a tool result that no rule acted on when it was recorded."""
    turn_id: uuid.UUID
    point: str
    tool: str | None
    tool_call_id: str | None
    recorded_verdict: str
    draft_verdict: str
    rule_ids_before: list[str]
    rule_ids_after: list[str]


class SkippedCount(BaseModel):
    reason: str
    count: int


class SimulationResult(BaseModel):
    evaluated: int
    truncated: bool
    """True when the time cap stopped the replay: the counts are those of the inputs judged so far."""
    counts: list[VerdictCount]
    changed: list[ChangedDecision]
    changed_total: int
    skipped: list[SkippedCount]
    draft_policy_hash: str
    """The hash of the draft as `PUT /policies` would store it."""


class RuleExplanation(BaseModel):
    rule_id: str
    source: Literal["tenant", "agent", "blacklist", "builtin"]
    point: str
    evaluated: bool
    matched: bool
    why: str


class DecisionExplanation(BaseModel):
    decision_id: uuid.UUID
    turn_id: uuid.UUID
    point: str
    tool: str | None
    tool_call_id: str | None
    recorded_verdict: str
    recorded_rule_id: str | None
    verdict: str
    """The verdict of the reconstructed set on the recorded input."""
    decided_by: str | None
    policy_hash: str
    """The receipt's hash."""
    reconstructed_policy_hash: str
    reconstructed: bool
    note: str | None
    agent_id: uuid.UUID
    agent_version: int
    tenant_policy_version: int
    rules: list[RuleExplanation]
