"""The SSE event payloads, published in OpenAPI as one union discriminated on `type`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from app.turns.schemas import ErrorInfo, TurnStatus, Usage


class _Event(BaseModel):
    turn_id: str
    seq: int


class TurnStarted(_Event):
    type: Literal["turn.started"]
    session_id: str
    agent_id: str
    agent_version: int
    resumed_by: str | None


class NodeStarted(_Event):
    type: Literal["node.started"]
    node: str
    loop: int


class NodeEnded(_Event):
    type: Literal["node.ended"]
    node: str
    loop: int


class MessageDelta(_Event):
    type: Literal["message.delta"]
    text: str


class MessageCompleted(_Event):
    type: Literal["message.completed"]
    text: str


class ToolCallRequested(_Event):
    type: Literal["tool_call.requested"]
    tool_call_id: str
    name: str
    arguments: dict[str, Any]


class PolicyDecisionEvent(_Event):
    type: Literal["policy.decision"]
    point: Literal["pre_llm", "tool"]
    tool_call_id: str | None
    verdict: Literal["allow", "deny", "requires_approval"]
    rule_id: str | None
    reason: str | None
    policy_hash: str


class ToolCallCompleted(_Event):
    type: Literal["tool_call.completed"]
    tool_call_id: str
    name: str
    is_error: bool
    result: str


class ApprovalRequired(_Event):
    type: Literal["approval.required"]
    approval_id: str
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    reason: str | None


class ContextDegraded(_Event):
    type: Literal["context.degraded"]
    component: Literal["assemble", "validate", "ingest"]
    error: str


class UsageEvent(_Event):
    type: Literal["usage"]
    input_tokens: int
    output_tokens: int


class TurnEnded(_Event):
    type: Literal["turn.ended"]
    status: TurnStatus
    final_output: str | None
    usage: Usage
    loop_count: int
    error: ErrorInfo | None


TurnEvent = Annotated[
    TurnStarted
    | NodeStarted
    | NodeEnded
    | MessageDelta
    | MessageCompleted
    | ToolCallRequested
    | PolicyDecisionEvent
    | ToolCallCompleted
    | ApprovalRequired
    | ContextDegraded
    | UsageEvent
    | TurnEnded,
    Field(discriminator="type"),
]
TURN_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(TurnEvent)


def event_schemas() -> dict[str, Any]:
    """JSON schemas of every event (and the `TurnEvent` union) for OpenAPI components."""
    schema = TURN_EVENT_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
    components: dict[str, Any] = dict(schema.pop("$defs", {}))
    components["TurnEvent"] = schema
    return components


SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The turn's events as Server-Sent Events (`id: SEQ`, `event: TYPE`, `data: JSON`).",
        "content": {
            "text/event-stream": {
                "schema": {"$ref": "#/components/schemas/TurnEvent"},
                "x-sse-event-data": {"$ref": "#/components/schemas/TurnEvent"},
            },
        },
    }
}
