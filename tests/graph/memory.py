"""An in-memory `TurnJournal` and the context a node runs with, for node tests without a database.

Any runtime can be tested against `MemoryJournal`: it keeps what was recorded, in order, and the
ledger semantics of the real store (the first result under a key wins).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from app.agents.config import AgentConfig
from app.context.compaction import StoredSummary
from app.governance.gate import Governance
from app.governance.policy import Decision, PolicySet, parse_rules
from app.graph.context import TurnContext
from app.providers.base import ChatMessage, Provider, ToolCall
from app.providers.scripted import ScriptedProvider
from app.runtime.port.events import EventBody
from app.runtime.port.journal import ApprovalRequest, ModelUsage, QuotaHold, TurnIdentity
from app.tools.base import ToolResult
from app.tools.toolbox import ToolBox


@dataclass
class MemoryJournal:
    ident: TurnIdentity = field(
        default_factory=lambda: TurnIdentity("tenant-a", uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
    )
    history: list[ChatMessage] = field(default_factory=list)
    events: list[EventBody] = field(default_factory=list)
    messages: list[ChatMessage] = field(default_factory=list)
    usage: list[ModelUsage] = field(default_factory=list)
    receipts: list[tuple[Decision, str | None, str | None]] = field(default_factory=list)
    ledger: dict[str, ToolResult] = field(default_factory=dict)
    ledger_reads: list[str] = field(default_factory=list)
    dispatches: list[tuple[str, int, ToolCall]] = field(default_factory=list)
    approvals: dict[uuid.UUID, ApprovalRequest] = field(default_factory=dict)
    audits: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    unanswered: list[ModelUsage] = field(default_factory=list)
    settled: list[tuple[QuotaHold, int]] = field(default_factory=list)
    summaries: list[StoredSummary] = field(default_factory=list)
    checkpoints: int = 0
    staged_at_checkpoint: list[int] = field(default_factory=list)
    """How many messages had been recorded at each checkpoint (and dispatch)."""

    def event(self, event: EventBody) -> int:
        self.events.append(event)
        return len(self.events)

    def assistant_message(self, message: ChatMessage, usage: ModelUsage) -> None:
        self.messages.append(message)
        self.usage.append(usage)

    def tool_result(self, call: ToolCall, result: ToolResult) -> None:
        self.messages.append(
            ChatMessage(
                role="tool", content=result.content, tool_call_id=call.id, name=call.name, is_error=result.is_error
            )
        )

    def decision(self, decision: Decision, *, tool_call_id: str | None = None, tool_name: str | None = None) -> None:
        self.receipts.append((decision, tool_call_id, tool_name))

    def unanswered_call(self, usage: ModelUsage) -> None:
        self.unanswered.append(usage)

    @property
    def cancelled_usage(self) -> ModelUsage | None:
        return None

    def quota_settled(self, hold: QuotaHold, used: int) -> None:
        self.settled.append((hold, used))

    async def checkpoint(self) -> None:
        self.checkpoints += 1
        self.staged_at_checkpoint.append(len(self.messages))

    async def ledger_get(self, key: str) -> ToolResult | None:
        self.ledger_reads.append(key)
        return self.ledger.get(key)

    async def dispatched(self, key: str, loop: int, call: ToolCall) -> None:
        self.dispatches.append((key, loop, call))
        await self.checkpoint()

    async def ledger_dispatched(self, key: str) -> dict[str, Any] | None:
        if key in self.ledger:
            return None
        return next((call.arguments for k, _, call in self.dispatches if k == key), None)

    async def ledger_put(self, key: str, loop: int, call: ToolCall, result: ToolResult) -> ToolResult:
        return self.ledger.setdefault(key, result)

    async def request_approvals(self, requests: Sequence[ApprovalRequest]) -> list[uuid.UUID]:
        ids = [uuid.uuid4() for _ in requests]
        self.approvals.update(zip(ids, requests, strict=True))
        return ids

    async def audit(self, kind: str, detail: Mapping[str, Any]) -> None:
        self.audits.append((kind, dict(detail)))

    def model_call(self, usage: ModelUsage) -> None:
        self.usage.append(usage)

    async def latest_summary(self) -> StoredSummary | None:
        return self.summaries[-1] if self.summaries else None

    async def save_summary(self, summary: StoredSummary, *, tokens: int) -> None:
        await self.checkpoint()
        self.summaries.append(summary)

    async def stored_history(self) -> list[ChatMessage]:
        return [*self.history, *self.messages]

    def types(self) -> list[str]:
        return [event.type for event in self.events]

    def of_type(self, event_type: str) -> list[Any]:
        return [event for event in self.events if event.type == event_type]


class FixedGovernance(Governance):
    """The policy in force is a given set (or the deny that stands in for an unreadable one)."""

    def __init__(self, policy: PolicySet | Decision) -> None:
        self._policy = policy

    async def current(self, point: Any) -> PolicySet | Decision:
        return self._policy


def rules(*raw: dict[str, Any]) -> PolicySet:
    return PolicySet(tenant_rules=parse_rules(list(raw)))


def node_runtime(
    journal: MemoryJournal,
    *,
    script: list[dict[str, Any]] | None = None,
    tools: Sequence[str] = ("builtin:calculator",),
    policy: PolicySet | Decision | None = None,
    provider: Provider | None = None,
    snapshot: dict[str, Any] | None = None,
    restored: bool = False,
) -> Runtime[TurnContext]:
    model = {"provider": "scripted", "name": "scripted-1", "script": script or [{"text": "hello"}]}
    document = {"model": model, "system_prompt": "be brief", "tools": list(tools), **(snapshot or {})}
    context = TurnContext(
        ident=journal.ident,
        config=AgentConfig.model_validate(document),
        model=model,
        journal=journal,
        provider=provider or ScriptedProvider(),
        tools=ToolBox(tool_refs=list(tools), gateway=None, gateway_token=None, team_unit="default"),
        governance=FixedGovernance(policy if policy is not None else PolicySet()),
        restored=restored,
    )
    return Runtime(context=context)
