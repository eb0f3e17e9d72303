"""`TurnRecorder`: the engine's `TurnJournal`, over the turn's event stream and the turn store.

Staged records go to the turn's batched writer (app/runtime/stream.py) in the order they are
recorded; immediate ones are single statements of the store (app/runtime/store/turns.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from app.context.compaction import StoredSummary
from app.core.metrics import POLICY_DECISIONS
from app.governance.policy import Decision
from app.providers.base import ChatMessage, ToolCall
from app.runtime.port.events import ApprovalRequired, EventBody, PolicyDecisionEvent, UsageEvent
from app.runtime.port.journal import ApprovalRequest, ModelUsage, QuotaHold, TurnIdentity
from app.runtime.store import summaries
from app.runtime.store.batch import LEDGER
from app.runtime.store.quota import QUOTA_LEDGER, settle_row
from app.runtime.store.turns import (
    DECISIONS,
    MESSAGES,
    USAGE,
    TurnStore,
    approval_row,
    decision_row,
    ledger_row,
    message_row,
    usage_row,
)
from app.runtime.stream import TurnStream
from app.tools.base import ToolResult


class TurnRecorder:
    def __init__(self, ident: TurnIdentity, owner_sub: str, stream: TurnStream, store: TurnStore) -> None:
        self._ident = ident
        self._owner_sub = owner_sub
        self._stream = stream
        self._store = store
        self._cancelled: ModelUsage | None = None

    @property
    def ident(self) -> TurnIdentity:
        return self._ident

    def event(self, event: EventBody) -> int:
        return self._stream.emit(event)

    def assistant_message(self, message: ChatMessage, usage: ModelUsage) -> None:
        self._stream.stage(MESSAGES, message_row(self._ident, message))
        self._stream.stage(USAGE, usage_row(self._ident, usage))

    def unanswered_call(self, usage: ModelUsage) -> None:
        self._stream.stage(USAGE, usage_row(self._ident, usage))
        self._stream.emit(
            UsageEvent(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, kind=usage.kind)
        )
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            before = self._cancelled or ModelUsage(usage.model, 0, 0, usage.kind)
            self._cancelled = dataclasses.replace(
                before,
                input_tokens=before.input_tokens + usage.input_tokens,
                output_tokens=before.output_tokens + usage.output_tokens,
            )

    @property
    def cancelled_usage(self) -> ModelUsage | None:
        return self._cancelled

    def quota_settled(self, hold: QuotaHold, used: int) -> None:
        self._stream.stage(QUOTA_LEDGER, settle_row(hold, used))

    def tool_result(self, call: ToolCall, result: ToolResult) -> None:
        message = ChatMessage(
            role="tool", content=result.content, tool_call_id=call.id, name=call.name, is_error=result.is_error
        )
        self._stream.stage(MESSAGES, message_row(self._ident, message))

    def decision(self, decision: Decision, *, tool_call_id: str | None = None, tool_name: str | None = None) -> None:
        POLICY_DECISIONS.labels(point=decision.point, verdict=decision.verdict).inc()
        self._stream.stage(
            DECISIONS, decision_row(self._ident, decision, tool_call_id=tool_call_id, tool_name=tool_name)
        )
        self._stream.emit(
            PolicyDecisionEvent(
                point=decision.point,
                tool_call_id=tool_call_id,
                verdict=decision.verdict,
                rule_id=decision.rule_id,
                reason=decision.reason,
                policy_hash=decision.policy_hash,
                decided_by=decision.decided_by,
                arguments_sha256=decision.arguments_sha256,
                edited_arguments_sha256=decision.edited_arguments_sha256,
                detector=decision.detector,
                match_count=decision.match_count,
            )
        )

    def model_call(self, usage: ModelUsage) -> None:
        self._stream.stage(USAGE, usage_row(self._ident, usage))

    async def latest_summary(self) -> StoredSummary | None:
        return await summaries.latest_summary(self._store.sql, self._ident.tenant_id, self._ident.session_id)

    async def save_summary(self, summary: StoredSummary, *, tokens: int) -> None:
        await self._stream.flush()
        await summaries.save_summary(self._store.sql, self._ident, summary, tokens=tokens)

    async def checkpoint(self) -> None:
        await self._stream.flush()

    async def ledger_get(self, key: str) -> ToolResult | None:
        return await self._store.ledger_get(self._ident.tenant_id, key)

    async def dispatched(self, key: str, loop: int, call: ToolCall) -> None:
        """The call's request (the assistant message naming it) and a `dispatched` ledger row are
        stored before it leaves."""
        self._stream.stage(LEDGER, ledger_row(self._ident, key=key, loop=loop, call=call, result=None))
        await self._stream.flush()

    async def ledger_dispatched(self, key: str) -> dict[str, Any] | None:
        return await self._store.ledger_dispatched(self._ident.tenant_id, key)

    async def ledger_put(self, key: str, loop: int, call: ToolCall, result: ToolResult) -> ToolResult:
        """The call's receipt (a denial's is staged just before) is stored before its outcome."""
        await self._stream.flush()
        return await self._store.ledger_put(self._ident, key=key, loop=loop, call=call, result=result)

    async def request_approvals(self, requests: Sequence[ApprovalRequest]) -> list[uuid.UUID]:
        """A call whose approval a lost run already stored (it died before the turn ended
        `interrupted`) interrupts on that approval: one row per call, the first stays decidable."""
        stored = await self._store.pending_approvals(self._ident.tenant_id, self._ident.turn_id)
        rows = [approval_row(self._ident, self._owner_sub, r) for r in requests if r.call.id not in stored]
        if rows:
            await self._store.create_approvals(rows)
        ids = {**stored, **{str(row["tool_call_id"]): row["id"] for row in rows}}
        for request in requests:
            self._stream.emit(
                ApprovalRequired(
                    approval_id=str(ids[request.call.id]),
                    tool_call_id=request.call.id,
                    name=request.call.name,
                    arguments=request.call.arguments,
                    reason=request.decision.reason,
                    result=request.result,
                )
            )
        return [ids[request.call.id] for request in requests]

    async def audit(self, kind: str, detail: Mapping[str, Any]) -> None:
        await self._store.record_audit(self._ident, kind, dict(detail))

    async def stored_history(self) -> list[ChatMessage]:
        return await self._store.history(self._ident.tenant_id, self._ident.session_id)
