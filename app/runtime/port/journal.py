"""The port between the turn engine and a runtime: what a runtime is given, and what it records.

The engine (app/runtime) launches, follows, cancels, recovers and settles turns; a *runtime* runs
one turn's loop: the LangGraph graph (app/graph) today, the Claude Agent SDK next. Every runtime
is handed a `TurnRun` (what the turn is), a `TurnServices` (what it may call) and a `TurnJournal`
(where everything it does is recorded), and reports `Progress` as it goes. It records in domain
terms only (an event, an assistant message with its usage, a tool result, a decision receipt, the
tool ledger, approvals, audit records), never tables or rows, so the same journal serves a graph
node and an SDK hook, a test keeps it in memory, and a continuation after a crash reads back what
was stored.

This module imports no engine code: only domain types (providers, tools, governance, context, the
event models).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

from app.context.compaction import StoredSummary
from app.context.engine_client import ContextEngineClient
from app.governance.gate import Governance
from app.governance.policy import Decision
from app.providers.base import ChatMessage, Provider, ToolCall
from app.runtime.port.events import ContinueReason, EndStatus, EventBody, UsageKind
from app.tools.base import ToolResult
from app.tools.toolbox import ToolBox


@dataclass(frozen=True, slots=True)
class TurnIdentity:
    tenant_id: str
    session_id: uuid.UUID
    turn_id: uuid.UUID
    agent_id: uuid.UUID


class HumanDecision(TypedDict):
    """A human's decision on a gated call, handed to the run that the decision resumes."""

    approval_id: str
    decision: str
    reason: str | None
    arguments: dict[str, Any] | None
    decided_by: NotRequired[str | None]
    rule_id: NotRequired[str | None]
    """The rule that asked for the human (the receipt of the decision names it too)."""
    result: NotRequired[str | None]
    """Set when the human judged a tool's result (a `tool_result` rule), not the call: what they saw."""


@dataclass(frozen=True, slots=True)
class StartReads:
    """What the read of the run's session already brought along, fresh as of that statement: the
    tenant's newest policy rules (`tenant_rules`, as stored; None: it has none) for the run's first
    decision, and the keys of its model (app/credentials/store.py `TenantKeys`; None: read them at the
    first model call). Later decisions read the rules again."""

    tenant_rules: Any
    keys: Any = None


@dataclass(frozen=True, slots=True)
class TokenQuota:
    """A tenant's token quota: `tokens` per UTC `period` (`day` or `month`)."""

    period: str
    tokens: int


@dataclass(frozen=True, slots=True)
class QuotaHold:
    """What one model call reserved of its tenant's quota, until it settles."""

    tenant_id: str
    period_start: datetime
    tokens: int
    id: uuid.UUID
    """Its row in `quota_reservations`: whoever deletes it (the settle, a continuation) releases it."""


class FileReader(Protocol):
    async def read(self, tenant_id: str, file_ids: Iterable[str]) -> dict[str, bytes]:
        """The bytes of those of the files that still exist, by id."""
        ...


class QuotaGate(Protocol):
    async def reserve(self, tokens: int) -> QuotaHold | None:
        """Reserve `tokens` in one atomic statement if the period is below its quota; None if spent."""
        ...


def event_key(data: Mapping[str, Any]) -> str:
    """What tells apart the events of one type that a continuation may repeat (see `Continued.stored_events`)."""
    if "tool_call_id" in data:
        return str(data["tool_call_id"])
    return f"{data.get('node')}:{data.get('loop')}"


@dataclass(frozen=True, slots=True)
class Continued:
    """A run that continues a `running` turn whose run stopped without settling (a dead or a draining replica).

    It is not a resume (`TurnRun.resumed`, an approval's decision): it opens with `turn.resumed`, not
    `turn.started`, and the runtime picks up at the last stored step of the turn.
    """

    reason: ContinueReason
    last_durable_seq: int
    """The highest seq stored of the turn: events a client saw above it were lost with the dead run."""
    stored_events: frozenset[tuple[str, str]] = frozenset()
    """The turn's stored events a continuing run may come to emit again, as (type, `event_key`): tool
    events by tool_call_id, node events by node and loop. It emits again only what the lost run never
    stored, so the stream after the client's drop rule reads like one run."""

    def stored(self, event_type: str, key: str) -> bool:
        return (event_type, key) in self.stored_events

    input_judged: bool = False
    """The turn's input already has its `pre_llm` receipt (it is not judged twice)."""


@dataclass(frozen=True, slots=True)
class Supersedes:
    """The turn a new turn regenerates (POST /turns/{id}/regenerate): its messages are out of the history."""

    turn_id: uuid.UUID
    input: str
    """Its input: the Claude SDK runtime finds that prompt in its transcript and resumes before it."""


@dataclass(slots=True)
class TurnRun:
    """Everything one run of a turn needs, read from the database when it starts or resumes."""

    ident: TurnIdentity
    agent_version: int
    owner_sub: str
    snapshot: dict[str, Any]
    """The agent version's configuration pinned in the session (validated as `AgentConfig`)."""
    input: str
    history: list[ChatMessage]
    """The session's stored conversation, this turn's user message included."""
    max_loops: int
    max_output_tokens: int
    max_total_tokens: int | None = None
    """Input + output of every model call of the turn; None: no cap."""
    token_quota: TokenQuota | None = None
    """The tenant's quota, which every model call reserves from (app/runtime/store/quota.py)."""
    last_seq: int = 0
    seq_ceiling: int = 0
    """The highest seq this run may show followers before a write of its own reserves more
    (`turns.seq_ceiling`, app/runtime/stream.py). 0: nothing is shown before it is stored or reserved."""
    loop_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    resumed_by: uuid.UUID | None = None
    """The approval whose decision resumes this run; None for a new turn."""
    decisions: dict[str, HumanDecision] = field(default_factory=dict)
    """Human decisions by tool_call_id (a resumed run)."""
    pending: list[ToolCall] = field(default_factory=list)
    """A resumed run: the stopped batch's tool calls, to continue at the call that waited."""
    last_text: str = ""
    """A resumed run: the text of the model reply that asked for `pending`."""
    mode: str = "interactive"
    """`autonomous`: the engine runs it through the PLAN / PURSUE runtime (app/autonomy)."""
    max_steps: int = 0
    """An autonomous turn's bound on its plan's todos (added ones included)."""
    start_reads: StartReads | None = None
    """What the read of its session brought along (None: nothing, everything is read when needed)."""
    plan_events: list[dict[str, Any]] = field(default_factory=list)
    """A resumed or continued autonomous run: its stored `plan.*` events (the plan and each step's state)."""
    continued: Continued | None = None
    """Set when this run continues a running turn whose run was lost (see `Continued`)."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema the turn's final answer must meet (app/structured); None: free text."""
    supersedes: Supersedes | None = None
    """Set on the first run of a turn that regenerates another."""

    @property
    def resumed(self) -> bool:
        return self.resumed_by is not None

    @property
    def continuing(self) -> bool:
        return self.continued is not None


@dataclass(slots=True)
class TurnServices:
    """What a run may call: the model, its tools, the policy in force, the Context Engine."""

    provider: Provider
    tools: ToolBox
    governance: Governance
    context_engine: ContextEngineClient | None = None
    context_token: Callable[[], str] | None = None
    """A fresh token for the Context Engine (only set together with `context_engine`)."""
    quota: QuotaGate | None = None
    """Set when the tenant has a token quota: every model call reserves before it starts."""
    files: FileReader | None = None
    """Reads the attachments a prompt names, for each model call."""


@dataclass(slots=True)
class Progress:
    """Where a run stands; the engine settles the turn from the last one it saw (even if cut short)."""

    status: EndStatus | None = None
    """Set once the run has an outcome."""
    error: dict[str, Any] | None = None
    final_output: str | None = None
    output: dict[str, Any] | None = None
    """The final answer as the object the turn's output schema asked for."""
    last_text: str = ""
    """The model's latest text: the final output of a turn stopped by a limit or a cancel."""
    loop_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What one model call cost."""

    model: str
    input_tokens: int
    output_tokens: int
    kind: UsageKind = "model"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call that waits for a human: the `requires_approval` decision that gated it."""

    call: ToolCall
    loop: int
    decision: Decision
    result: str | None = None
    """A `tool_result` gate: the call ran, and this result waits for the human before the model sees it."""


class TurnJournal(Protocol):
    """Where a runtime records one run of a turn.

    Two kinds of method. *Staged* ones (`event`, `assistant_message`, `tool_result`, `decision`, `model_call`)
    return at once: events reach live followers immediately, and everything staged is stored in
    order with the turn's next write (a periodic batch, a `checkpoint`, or the settle that ends the
    run, atomically with `turn.ended`). *Immediate* ones (`async`) are stored before they return.
    """

    @property
    def ident(self) -> TurnIdentity: ...

    def event(self, event: EventBody) -> int:
        """Append an event to the turn's stream; returns its sequence number."""
        ...

    def assistant_message(self, message: ChatMessage, usage: ModelUsage) -> None:
        """The model's reply (text and tool calls) for the conversation, and a usage row for what it cost."""
        ...

    def tool_result(self, call: ToolCall, result: ToolResult) -> None:
        """The tool message answering `call` for the conversation (the ledger has its own record)."""
        ...

    def decision(self, decision: Decision, *, tool_call_id: str | None = None, tool_name: str | None = None) -> None:
        """A policy decision receipt (point `pre_llm` or `tool`) and its `policy.decision` event."""
        ...

    def unanswered_call(self, usage: ModelUsage) -> None:
        """A model call that gave no reply (it failed, or the turn was cancelled mid-stream): its usage
        row and `usage` event, from what the provider reported or streamed. The engine adds the usage of
        a call cut by a cancel to the turn's totals (`cancelled_usage`)."""
        ...

    @property
    def cancelled_usage(self) -> ModelUsage | None:
        """What calls cut by a cancel cost in this run (`unanswered_call` while being cancelled)."""
        ...

    def quota_settled(self, hold: QuotaHold, used: int) -> None:
        """Settle a reservation to the call's real usage (staged: stored with the turn's next write)."""
        ...

    def model_call(self, usage: ModelUsage) -> None:
        """The usage row of a model call that adds nothing to the conversation (a summarisation)."""
        ...

    async def latest_summary(self) -> StoredSummary | None:
        """The session's newest compaction summary (stored at once, see `save_summary`)."""
        ...

    async def save_summary(self, summary: StoredSummary, *, tokens: int) -> None:
        """Store everything staged, then the summary with the ids of the first and the last message it covers."""
        ...

    async def checkpoint(self) -> None:
        """Store everything staged so far, now (before a tool call leaves, the model's request for it is stored)."""
        ...

    async def ledger_get(self, key: str) -> ToolResult | None:
        """The stored result of the call with this idempotency key, if it already completed."""
        ...

    async def dispatched(self, key: str, loop: int, call: ToolCall) -> None:
        """Record that `call` is about to be dispatched under `key`; stored before it returns.

        Call it right before the call leaves the service, after `ledger_get` found no result. A
        continuation after a crash sees which calls may have run (and retries them with the same
        key, which the MCP gateway deduplicates).
        """
        ...

    async def ledger_dispatched(self, key: str) -> dict[str, Any] | None:
        """The arguments of a call dispatched under `key` whose outcome was never stored; None otherwise.

        A continuing run re-sends such a call with the same key and these arguments, without judging it
        again: it was judged before it left (its receipt and `policy.decision` are stored with it).
        """
        ...

    async def ledger_put(self, key: str, loop: int, call: ToolCall, result: ToolResult) -> ToolResult:
        """Record a call's result under its key; if the key already holds a result, that one wins and is returned."""
        ...

    async def request_approvals(self, requests: Sequence[ApprovalRequest]) -> list[uuid.UUID]:
        """Store a pending approval per request, then emit `approval.required` for each; returns their ids."""
        ...

    async def audit(self, kind: str, detail: Mapping[str, Any]) -> None:
        """An audit record of something the turn skipped or degraded (stored at once)."""
        ...

    async def stored_history(self) -> list[ChatMessage]:
        """The session's conversation as stored now (what a continuation after a crash resumes from)."""
        ...


class TurnRuntime(Protocol):
    """Runs one turn's loop. `run` yields its progress and ends when the run has an outcome.

    The engine cancels the iteration to cancel the turn, and settles from the last `Progress`.
    """

    def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]: ...


@runtime_checkable
class CountsItsLoops(Protocol):
    """A runtime whose loop count is not the engine's (the engine counts tool rounds with every result stored)."""

    def continues_at(self, run: TurnRun) -> int:
        """The loop a continued run goes on at: `turn.resumed.from_loop`, and where its loop index resumes."""
        ...
