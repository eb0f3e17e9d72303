from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

MAX_ITEMS = 10_000
"""Items a dataset may hold in all."""
MAX_ITEMS_PER_REQUEST = 1_000
"""Items one request adds (a larger dataset is appended in several): a body past the limit is then a
422 naming the field, never a body too large to read."""
MAX_INPUT = 100_000


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Equals(_Check):
    type: Literal["equals"]
    value: str = Field(max_length=MAX_INPUT)


class Contains(_Check):
    type: Literal["contains"]
    value: str = Field(min_length=1, max_length=10_000)
    case_sensitive: StrictBool = False


class Regex(_Check):
    type: Literal["regex"]
    pattern: str = Field(min_length=1, max_length=2_000)
    """RE2 syntax, like every pattern a user writes (docs/governance.md)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        from app.governance.patterns import check_pattern

        check_pattern(pattern)
        return pattern


class JsonSchemaCheck(_Check):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")
    """JSON Schema 2020-12, against the structured output (or the answer parsed as JSON)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("schema_")
    @classmethod
    def _valid(cls, schema: dict[str, Any]) -> dict[str, Any]:
        from app.evals.schema_check import schema_problem

        problem = schema_problem(schema)
        if problem is not None:
            raise ValueError(f"invalid JSON Schema: {problem}")
        return schema


class ExpectedCall(_Check):
    name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class ToolCalls(_Check):
    type: Literal["tool_calls"]
    calls: list[ExpectedCall] = Field(max_length=100)
    order: Literal["exact", "set"] = "exact"


class MaxTokens(_Check):
    type: Literal["max_tokens"]
    value: StrictInt = Field(ge=1)


class MaxLatency(_Check):
    type: Literal["max_latency_ms"]
    value: StrictInt = Field(ge=1)


class JudgeModel(_Check):
    provider: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=256)


class Judge(_Check):
    type: Literal["judge"]
    rubric: str = Field(min_length=1, max_length=10_000)
    model: JudgeModel


class Reference(_Check):
    type: Literal["reference"]
    """Token F1 against the item's reference answer."""


Check = Annotated[
    Equals | Contains | Regex | JsonSchemaCheck | ToolCalls | MaxTokens | MaxLatency | Judge | Reference,
    Field(discriminator="type"),
]


class Expected(_Check):
    checks: list[Check] = Field(default_factory=list, max_length=50)
    reference: str | None = Field(default=None, max_length=MAX_INPUT)


class RecordedTool(_Check):
    name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = Field(max_length=1_000_000)
    is_error: StrictBool = False


class ItemIn(_Check):
    input: str = Field(min_length=1, max_length=MAX_INPUT)
    expected: Expected = Field(default_factory=Expected)
    """A list of checks, or `{"checks": [...], "reference": "..."}`."""
    recorded_tools: list[RecordedTool] = Field(default_factory=list, max_length=1_000)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _checks_as_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("expected"), list):
            return {**data, "expected": {"checks": data["expected"]}}
        return data


class DatasetCreate(_Check):
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = Field(default="", max_length=10_000)
    items: list[ItemIn] = Field(default_factory=list, max_length=MAX_ITEMS_PER_REQUEST)


class ItemsAppend(_Check):
    items: list[ItemIn] = Field(min_length=1, max_length=MAX_ITEMS_PER_REQUEST)


class FromSessions(_Check):
    session_ids: list[uuid.UUID] = Field(min_length=1, max_length=100)


class Dataset(BaseModel):
    id: uuid.UUID
    name: str
    description: str
    item_count: int
    owner: str
    created_at: datetime
    updated_at: datetime


class DatasetPage(BaseModel):
    items: list[Dataset]
    next_cursor: str | None = None


class Item(BaseModel):
    id: uuid.UUID
    position: int
    input: str
    expected: dict[str, Any]
    recorded_tools: list[dict[str, Any]]
    metadata: dict[str, Any]
    created_at: datetime


class ItemPage(BaseModel):
    items: list[Item]
    next_cursor: str | None = None


class ItemsAdded(BaseModel):
    added: int
    item_count: int
    items: list[Item]


class EvalCreate(_Check):
    dataset_id: uuid.UUID
    agent_id: uuid.UUID
    agent_version: StrictInt = Field(ge=1)
    baseline_version: StrictInt | None = Field(default=None, ge=1)
    tools: Literal["recorded", "live"] = "recorded"
    """`recorded`: each call is answered from the item's recorded results and nothing runs; `live`: tools run."""
    concurrency: StrictInt = Field(default=4, ge=1, le=16)


class Progress(BaseModel):
    total: int
    done: int


class EvalRun(BaseModel):
    id: uuid.UUID
    status: Literal["queued", "running", "completed", "cancelled", "failed"]
    dataset_id: uuid.UUID
    agent_id: uuid.UUID
    agent_version: int
    baseline_version: int | None
    tools: str
    concurrency: int
    progress: Progress
    summary: dict[str, Any] = Field(
        description="Per version: mean score, per-check pass rates, tokens, p50/p95 latency; with a baseline, "
        "`comparison`: wins, losses, ties and the items that changed."
    )
    error: str | None
    created_at: datetime
    ended_at: datetime | None


class EvalRunPage(BaseModel):
    items: list[EvalRun]
    next_cursor: str | None = None


class EvalItem(BaseModel):
    item_id: uuid.UUID
    position: int
    agent_version: int
    session_id: uuid.UUID
    turn_id: uuid.UUID
    status: str
    turn_status: str | None
    score: float | None
    scores: list[dict[str, Any]]
    tokens: int
    latency_ms: int


class EvalItemPage(BaseModel):
    items: list[EvalItem]
    next_cursor: str | None = None
