"""A journal that records through the turn's own and keeps the current step's conversation (for the next prompt)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from app.context.compaction import StoredSummary
from app.governance.policy import Decision
from app.providers.base import ChatMessage, ToolCall
from app.runtime.port.events import EventBody
from app.runtime.port.journal import ApprovalRequest, ModelUsage, QuotaHold, TurnIdentity, TurnJournal
from app.tools.base import ToolResult


class StepJournal:
    def __init__(self, journal: TurnJournal) -> None:
        self.inner = journal
        self.messages: list[ChatMessage] = []
        """Every assistant and tool message recorded through this journal, and the steps' goals, in order."""

    def note(self, message: ChatMessage) -> None:
        """A message for later prompts that is not stored (a step's goal)."""
        self.messages.append(message)

    @property
    def ident(self) -> TurnIdentity:
        return self.inner.ident

    def event(self, event: EventBody) -> int:
        return self.inner.event(event)

    def assistant_message(self, message: ChatMessage, usage: ModelUsage) -> None:
        self.messages.append(message)
        self.inner.assistant_message(message, usage)

    def tool_result(self, call: ToolCall, result: ToolResult) -> None:
        self.messages.append(
            ChatMessage(
                role="tool", content=result.content, tool_call_id=call.id, name=call.name, is_error=result.is_error
            )
        )
        self.inner.tool_result(call, result)

    def decision(self, decision: Decision, *, tool_call_id: str | None = None, tool_name: str | None = None) -> None:
        self.inner.decision(decision, tool_call_id=tool_call_id, tool_name=tool_name)

    def unanswered_call(self, usage: ModelUsage) -> None:
        self.inner.unanswered_call(usage)

    @property
    def cancelled_usage(self) -> ModelUsage | None:
        return self.inner.cancelled_usage

    def quota_settled(self, hold: QuotaHold, used: int) -> None:
        self.inner.quota_settled(hold, used)

    def model_call(self, usage: ModelUsage) -> None:
        self.inner.model_call(usage)

    async def latest_summary(self) -> StoredSummary | None:
        return await self.inner.latest_summary()

    async def save_summary(self, summary: StoredSummary, *, tokens: int) -> None:
        await self.inner.save_summary(summary, tokens=tokens)

    async def checkpoint(self) -> None:
        await self.inner.checkpoint()

    async def ledger_get(self, key: str) -> ToolResult | None:
        return await self.inner.ledger_get(key)

    async def dispatched(self, key: str, loop: int, call: ToolCall) -> None:
        await self.inner.dispatched(key, loop, call)

    async def ledger_dispatched(self, key: str) -> dict[str, Any] | None:
        return await self.inner.ledger_dispatched(key)

    async def ledger_put(self, key: str, loop: int, call: ToolCall, result: ToolResult) -> ToolResult:
        return await self.inner.ledger_put(key, loop, call, result)

    async def request_approvals(self, requests: Sequence[ApprovalRequest]) -> list[uuid.UUID]:
        return await self.inner.request_approvals(requests)

    async def audit(self, kind: str, detail: Mapping[str, Any]) -> None:
        await self.inner.audit(kind, detail)

    async def stored_history(self) -> list[ChatMessage]:
        return await self.inner.stored_history()
