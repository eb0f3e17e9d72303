"""The turn's events: the models a runtime records are the models OpenAPI publishes.

A runtime builds an event body (`NodeStarted(node=…, loop=…)`) and hands it to its journal; the
journal stamps the envelope (`turn_id`, `seq`) when it appends the event to the turn's log
(`stamp`). The published schemas are these models with the envelope's two fields added, one
union discriminated on `type`. This module imports nothing of the engine: graph, runtimes and the
REST layer all read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

TurnStatus = Literal[
    "queued", "running", "interrupted", "completed", "loop_limit", "budget_exceeded", "cancelled", "failed"
]
UsageKind = Literal["model", "compaction", "plan"]
EndStatus = Literal["interrupted", "completed", "loop_limit", "budget_exceeded", "cancelled", "failed"]
"""How a run of a turn ends (`interrupted` waits for approvals; the others are terminal)."""


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class ErrorInfo(BaseModel):
    """`code` and `message`; extra keys (e.g. what a budget had spent) are kept as given."""

    model_config = ConfigDict(extra="allow")
    code: str
    message: str


class EventBody(BaseModel):
    """One event of a turn without its envelope; subclasses fix `type` to their literal."""

    type: str


class TurnStarted(EventBody):
    type: Literal["turn.started"] = "turn.started"
    session_id: str
    agent_id: str
    agent_version: int
    resumed_by: str | None


ContinueReason = Literal["replica_lost", "shutdown"]
"""Why a running turn continued on another run: its replica died, or a draining replica handed it over."""


class TurnResumed(EventBody):
    """Opens a run that continues a running turn (DESIGN.md "Operations"), in place of `turn.started`.

    A client drops the events it saw with a seq above `last_durable_seq` and below this event's:
    the run that streamed them died before storing them, and this run does their work again.
    """

    type: Literal["turn.resumed"] = "turn.resumed"
    reason: ContinueReason
    from_loop: int
    last_durable_seq: int


class NodeStarted(EventBody):
    type: Literal["node.started"] = "node.started"
    node: str
    loop: int


class NodeEnded(EventBody):
    type: Literal["node.ended"] = "node.ended"
    node: str
    loop: int


class MessageDelta(EventBody):
    type: Literal["message.delta"] = "message.delta"
    text: str


class MessageCompleted(EventBody):
    type: Literal["message.completed"] = "message.completed"
    text: str
    stop_reason: str = Field(
        default="end_turn",
        description="Why the model stopped, the same on every provider: `end_turn`, `tool_use`, `max_tokens`, "
        "`stop_sequence`, `refusal`.",
    )


class ToolCallRequested(EventBody):
    type: Literal["tool_call.requested"] = "tool_call.requested"
    tool_call_id: str
    name: str
    arguments: dict[str, Any]


class PolicyDecisionEvent(EventBody):
    type: Literal["policy.decision"] = "policy.decision"
    point: Literal["pre_llm", "tool", "output", "tool_result", "human"]
    tool_call_id: str | None
    verdict: Literal["allow", "deny", "requires_approval", "redact", "approve"]
    rule_id: str | None
    reason: str | None
    policy_hash: str
    decided_by: str | None = None
    """Point `human`: who decided (null otherwise)."""
    arguments_sha256: str | None = None
    """Point `human`: SHA-256 of the canonical JSON of the arguments the human saw."""
    edited_arguments_sha256: str | None = None
    """Point `human`, approved with edited arguments: SHA-256 of the arguments that ran."""
    detector: str | None = None
    """Points `output` and `tool_result`: what matched (a detector's name, or `regex`); never the text."""
    match_count: int | None = None
    """Points `output` and `tool_result`: how many matches the rule acted on."""


class ToolCallCompleted(EventBody):
    type: Literal["tool_call.completed"] = "tool_call.completed"
    tool_call_id: str
    name: str
    is_error: bool
    result: str


class ApprovalRequired(EventBody):
    type: Literal["approval.required"] = "approval.required"
    approval_id: str
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    reason: str | None
    result: str | None = None
    """A `tool_result` rule's approval: the tool's result the human is asked to let into the prompt."""


class ContextDegraded(EventBody):
    type: Literal["context.degraded"] = "context.degraded"
    component: Literal["assemble", "validate", "ingest"]
    error: str


class UsageEvent(EventBody):
    type: Literal["usage"] = "usage"
    input_tokens: int
    output_tokens: int
    kind: UsageKind = "model"
    """What the call was for: the turn's own reply, a summarisation of the context, a plan."""


class ContextCompacted(EventBody):
    """The built-in context compacted the prompt (DESIGN.md "Compaction (built-in context)")."""

    type: Literal["context.compacted"] = "context.compacted"
    strategy: Literal["summarize", "window"]
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int


class PlanTodo(BaseModel):
    id: str
    title: str


class PlanCreated(EventBody):
    """Autonomous mode: the todos the PLAN call decomposed the input into (ids assigned by the service)."""

    type: Literal["plan.created"] = "plan.created"
    todos: list[PlanTodo]


class PlanStepStarted(EventBody):
    type: Literal["plan.step.started"] = "plan.step.started"
    todo_id: str
    title: str


class PlanStepCompleted(EventBody):
    type: Literal["plan.step.completed"] = "plan.step.completed"
    todo_id: str
    title: str
    status: Literal["done", "failed", "skipped"]
    output: str


PLAN_EVENTS_LIKE = "plan.%"
"""The events an autonomous turn's plan and its steps' states are rebuilt from (app/autonomy/plan.py)."""


class TurnEnded(EventBody):
    type: Literal["turn.ended"] = "turn.ended"
    status: TurnStatus
    final_output: str | None
    output: dict[str, Any] | None = Field(
        default=None, description="The final answer parsed and validated against the turn's output schema"
    )
    usage: Usage
    loop_count: int
    error: ErrorInfo | None

    @classmethod
    def of(
        cls,
        status: TurnStatus,
        *,
        final_output: str | None,
        input_tokens: int,
        output_tokens: int,
        loop_count: int,
        error: dict[str, Any] | None,
        output: dict[str, Any] | None = None,
    ) -> TurnEnded:
        """The one place the closing event is built (a settled run, or a turn ended for a dead one)."""
        return cls(
            status=status,
            final_output=final_output,
            output=output,
            usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            loop_count=loop_count,
            error=None if error is None else ErrorInfo.model_validate(error),
        )


TurnEvent = Annotated[
    TurnStarted
    | TurnResumed
    | NodeStarted
    | NodeEnded
    | MessageDelta
    | MessageCompleted
    | ToolCallRequested
    | PolicyDecisionEvent
    | ToolCallCompleted
    | ApprovalRequired
    | ContextDegraded
    | ContextCompacted
    | UsageEvent
    | PlanCreated
    | PlanStepStarted
    | PlanStepCompleted
    | TurnEnded,
    Field(discriminator="type"),
]
TURN_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(TurnEvent)
ENVELOPE: dict[str, Any] = {
    "turn_id": {"type": "string", "title": "Turn Id"},
    "seq": {"type": "integer", "title": "Seq"},
}


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One event of a turn's log as a follower gets it: its seq, its type and its stored JSON (`stamp`)."""

    seq: int
    type: str
    data: str

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = orjson.loads(self.data)
        return body


@dataclass(frozen=True, slots=True)
class Reconnect:
    """The run stopped without `turn.ended` (handed over, or taken over): follow the turn again, from
    the last event seen, after `after_ms` (another replica continues it)."""

    after_ms: int


Followed = Sequence[LoggedEvent] | Reconnect
"""What following a turn yields: events that arrived together (in order), or the cut of its run."""


def stamp(turn_key: str, seq: int, event: EventBody) -> str:
    """The stored and streamed JSON of an event: `{"turn_id", "seq", "type", …its fields}`.

    orjson over the model's fields (nested models through `model_dump`): the same bytes as
    pydantic's JSON at a third of the cost, on the path every streamed token takes.
    """
    fields = event.__dict__ if event.__pydantic_extra__ is None else {**event.__dict__, **event.__pydantic_extra__}
    return orjson.dumps({"turn_id": turn_key, "seq": seq, **fields}, default=_nested).decode()


def _nested(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


FRAME_SCHEMA_NAME = "TurnEventFrame"
FRAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One Server-Sent Event: `id` is the event's seq, `event` its type, `data` the event as JSON.",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"type": "string"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"$ref": "#/components/schemas/TurnEvent"},
        },
    },
}


GENERIC_FRAME_SCHEMA_NAME = "ServerSentEvent"
GENERIC_FRAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One Server-Sent Event of a stream whose events are not turn events (AG-UI, AI SDK).",
    "required": ["data"],
    "properties": {"id": {"type": "string"}, "event": {"type": "string"}, "data": {"type": "string"}},
}


def event_schemas() -> dict[str, Any]:
    """JSON schemas of every event (and the `TurnEvent` union) for OpenAPI components.

    Every property of an event is always present in its data, so all are required, and each
    schema gets the envelope's `turn_id` and `seq` first.
    """
    schema = TURN_EVENT_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
    components: dict[str, Any] = dict(schema.pop("$defs", {}))
    for ref in schema["discriminator"]["mapping"].values():
        model = components[ref.removeprefix("#/components/schemas/")]
        model["properties"] = {**ENVELOPE, **model["properties"]}
        model["properties"]["type"].pop("default", None)
        model["required"] = list(model["properties"])
    components["TurnEvent"] = schema
    components[FRAME_SCHEMA_NAME] = FRAME_SCHEMA
    return components


SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The turn's events as Server-Sent Events (`id: SEQ`, `event: TYPE`, `data: JSON`).",
        "content": {
            "text/event-stream": {
                "schema": {"$ref": f"#/components/schemas/{FRAME_SCHEMA_NAME}"},
            },
        },
    }
}
