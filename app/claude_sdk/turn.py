"""One run of a turn on a Claude Code session: its SDK messages recorded through the journal.

The turn is also the gate's recorder (app/claude_sdk/gate.py): it keeps the tool ledger (keys are
`sha256(session_id:turn_id:tool_call_id)` as on the LangGraph runtime, with Claude Code's `tool_use`
ids; a row's `loop` counts the model calls of the turn that asked for tools), raises approvals, and
runs the in-process tools when Claude Code calls them. A call that waits for a human stops the SDK
turn (the hook answers `continue: false`): the run ends `interrupted`, and every later call of the
reply is held for the resume. Limits are ours too: a reply asking for tools at `max_loops` stops the turn `loop_limit`
before they run; output beyond `max_output_tokens` stops it `budget_exceeded`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import ClaudeSDKClient, ResultMessage
from opentelemetry import context as otel_context

from app.claude_sdk.events import EventMapper, ModelCall
from app.claude_sdk.gate import ToolGate, Verdict
from app.claude_sdk.reply_guard import ReplyGuard
from app.claude_sdk.surface import ToolSurface
from app.core import tracing
from app.core.metrics import TOOL_CALLS
from app.governance.budget import Budget, Spent, exceeded, overspent, spent_reason
from app.governance.gate import judged_result
from app.governance.output_guard import GUARDRAIL_BLOCKED, blocked_reason
from app.governance.policy import Decision, arguments_hash
from app.governance.screening import REFUSED_RESULT
from app.providers import telemetry
from app.providers.base import ChatMessage, ModelResponse, ToolCall
from app.providers.context_windows import estimate_tokens
from app.runtime.port.events import (
    EndStatus,
    EventBody,
    MessageCompleted,
    MessageDelta,
    ToolCallCompleted,
    ToolCallRequested,
    UsageEvent,
)
from app.runtime.port.journal import (
    ApprovalRequest,
    ModelUsage,
    Progress,
    QuotaHold,
    TurnJournal,
    TurnRun,
    TurnServices,
)
from app.tools.base import ToolResult
from app.tools.ledger_keys import idempotency_key

log = logging.getLogger(__name__)
QUOTA_SPENT = "the tenant's token quota for this period is spent"
CLOSE_WAIT_SECONDS = 30.0
"""How long an in-process tool call waits for its model reply to be recorded (it already streamed)."""

RESULT_NEEDS_A_HUMAN = "a human must approve this result first, which this runtime cannot ask for"

_EVENTS: dict[str, type[EventBody]] = {
    "message.delta": MessageDelta,
    "message.completed": MessageCompleted,
    "tool_call.requested": ToolCallRequested,
    "tool_call.completed": ToolCallCompleted,
    "usage": UsageEvent,
}


class SdkTurn:
    def __init__(self, run: TurnRun, services: TurnServices, journal: TurnJournal, surface: ToolSurface) -> None:
        self.run = run
        self.services = services
        self.journal = journal
        self.surface = surface
        self.model = str(run.snapshot["model"]["name"])
        self.progress = Progress(
            loop_count=run.loop_count,
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            last_text=run.last_text,
        )
        self.mapper = EventMapper()
        self.calls: dict[str, ToolCall] = {}
        self.results: dict[str, ToolResult] = {}
        """Results we produced (denials, in-process runs): what `tool_call.completed` reports."""
        self.denied: set[str] = set()
        self.waiting: set[str] = set()
        """Calls that wait for the resume: Claude Code's error result for them is not theirs."""
        self.grants: set[tuple[str, str]] = set()
        """(name, arguments hash) of native calls a human approved: allowed once when made again."""
        self._queued: dict[tuple[str, str], deque[str]] = {}
        self._recorded: dict[str, asyncio.Event] = {}
        self.had_tools = False
        """Whether the latest model reply asked for tools (set when a run opens by finishing such a reply's batch)."""
        self.stop: tuple[EndStatus, dict[str, Any] | None] | None = None
        self._asking: list[asyncio.Future[list[uuid.UUID]]] = []
        """Approval requests being stored by a hook: the run ends only once each is (row and event)."""
        self.gate = ToolGate(surface, services.governance, self)
        self.max_tokens = int(run.snapshot["model"].get("max_tokens", 1024))
        self._hold: QuotaHold | None = None
        """The tenant quota's reservation for the next (or the streaming) model call."""
        self._prompt_tokens = 0
        """Input tokens of the latest model call: the next prompt is at least as long."""
        self._span: telemetry.ModelCall | None = None
        """The model call streaming now (`chat {model}`)."""
        self._trace = otel_context.get_current()
        """The turn's trace context (`invoke_agent`), for the tool calls Claude Code calls back into."""
        self._reply: ReplyGuard | None = None
        """The `output` rules on the model call streaming now; None when none is in force."""

    # -- the gate's recorder ------------------------------------------------------------------

    def key(self, call_id: str) -> str:
        return idempotency_key(str(self.run.ident.session_id), str(self.run.ident.turn_id), call_id)

    async def stored_result(self, tool_call_id: str) -> ToolResult | None:
        return await self.journal.ledger_get(self.key(tool_call_id))

    def record_decision(self, decision: Decision, *, tool_call_id: str, tool_name: str) -> None:
        self.journal.decision(decision, tool_call_id=tool_call_id, tool_name=tool_name)

    async def on_verdict(self, tool_call_id: str, name: str, arguments: dict[str, Any], verdict: Verdict) -> Verdict:
        call = ToolCall(id=tool_call_id, name=name, arguments=arguments)
        self.calls[call.id] = call
        grant = (name, arguments_hash(arguments))
        if verdict.outcome == "requires_approval" and grant in self.grants:
            self.grants.discard(grant)
            verdict = Verdict("allow")
        if self.stop is not None or self.progress.loop_count >= self.run.max_loops:
            self.waiting.add(call.id)
            if self.stop is None:
                self.stop = ("loop_limit", None)
            return Verdict("held")
        if verdict.outcome == "requires_approval" and verdict.decision is not None:
            self.waiting.add(call.id)
            self.stop = ("interrupted", None)
            asking = asyncio.ensure_future(
                self.journal.request_approvals([ApprovalRequest(call, self.progress.loop_count, verdict.decision)])
            )
            self._asking.append(asking)
            await asyncio.shield(asking)
            return verdict
        if verdict.outcome == "deny":
            self.denied.add(call.id)
            self.results[call.id] = await self.journal.ledger_put(
                self.key(call.id), self.progress.loop_count, call, ToolResult(verdict.message, is_error=True)
            )
        elif verdict.outcome == "done" and verdict.stored is not None:
            self.results[call.id] = verdict.stored
        if verdict.outcome in ("allow", "done") and not self.surface.is_native(name):
            self._queued.setdefault(grant, deque()).append(call.id)
        return verdict

    async def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """An in-process tool call from Claude Code: ledger first, then the turn's toolbox."""
        queue = self._queued.get((name, arguments_hash(arguments)))
        if not queue:
            return ToolResult(f"tool {name!r} was not cleared by the gate", is_error=True)
        call = self.calls[queue.popleft()]
        if call.id in self.results:
            return self.results[call.id]
        await self._reply_recorded(call.id)
        if self.stop is not None:  # the turn stopped at this reply (a budget, the quota): nothing more runs
            self.waiting.add(call.id)
            return ToolResult("this call waits: the turn stops before it", is_error=True)
        key = self.key(call.id)
        await self.journal.dispatched(key, self.progress.loop_count, call)
        result = await self.execute(call, key)
        result = await self.journal.ledger_put(key, self.progress.loop_count, call, result)
        self.results[call.id] = await self._screened(call, result)
        return self.results[call.id]

    async def _screened(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """What Claude Code (the model) sees of an in-process tool's result: the `tool_result` rules'.
        A result a rule holds for a human is withheld: Claude Code cannot wait for one inside a tool call."""
        judged = await judged_result(await self.services.governance.current("tool_result"), call.name, result.content)
        if judged is None:
            return result
        for decision in judged.decisions:
            self.journal.decision(decision, tool_call_id=call.id, tool_name=call.name)
        if judged.gated is not None:
            return ToolResult(REFUSED_RESULT.format(reason=RESULT_NEEDS_A_HUMAN), is_error=True)
        return ToolResult(judged.text, is_error=result.is_error or judged.denied is not None)

    async def execute(self, call: ToolCall, key: str) -> ToolResult:
        """Run an in-process tool call through the turn's toolbox (its dispatch is recorded already)."""
        mcp = self.services.tools.is_mcp(call.name)
        with telemetry.tool_call(call.name, call.id, mcp=mcp, parent=self._trace) as span:
            result = await self.services.tools.run(call, key)
            if result.is_error:
                tracing.set_error(span, "tool_error")
        return result

    async def _reply_recorded(self, call_id: str) -> None:
        """Claude Code runs a tool only after the reply naming it streamed; wait until we recorded that reply."""
        event = self._recorded.setdefault(call_id, asyncio.Event())
        try:
            async with asyncio.timeout(CLOSE_WAIT_SECONDS):
                await event.wait()
        except TimeoutError:
            log.warning("tool call %s ran before its model reply was recorded", call_id)

    # -- the SDK turn ---------------------------------------------------------------------------

    async def drive(self, client: ClaudeSDKClient, prompt: dict[str, Any]) -> AsyncIterator[Progress]:
        """The SDK turn of `prompt`, whose first model call reserves from the tenant's quota first."""
        if (reason := self._over_budget(next_call=True)) is not None:
            self.stop = ("budget_exceeded", self._exceeded("budget_exceeded", reason))
        if self.stop is not None or not await self.reserve(json.dumps(prompt)):
            yield self.stopped()
            return
        await client.query(_one(prompt))
        try:
            async for progress in self._received(client):
                yield progress
            await self.approvals_stored()
        finally:  # a reserved call that never came (the turn stopped), or one cut short: what it cost
            self._settle_quota(self._cut_call_recorded())

    def _cut_call_recorded(self) -> int:
        """Record the model call the turn's stop cut short (a cancel, a hand-over) as unanswered, so the
        turn's usage counts what the quota settles; the tokens it cost (0 when none had started)."""
        call = self.mapper.call
        output = max(call.output_tokens, estimate_tokens(call.text, "anthropic")) if call.text else call.output_tokens
        if call.input_tokens + output == 0:
            return 0
        self.journal.unanswered_call(ModelUsage(self.model, call.input_tokens, output))
        return call.input_tokens + output

    async def _received(self, client: ClaudeSDKClient) -> AsyncIterator[Progress]:
        with contextlib.ExitStack() as spans:
            async for message in client.receive_response():
                opened = self.mapper.opened
                events = self.mapper.map(message)
                if self.mapper.opened > opened:
                    self._span = spans.enter_context(telemetry.model_call("anthropic", self.model, self.max_tokens))
                    if self.had_tools:
                        self.progress.loop_count += 1  # a new model call after a reply that asked for tools
                    await self._open_reply()
                if self._reply is not None:
                    events = [guarded for kind, data in events for guarded in self._reply.events(kind, data)]
                for kind, data in events:
                    await self._event(kind, data)
                await self._stop_if_blocked(client)
                for call in self.mapper.take_closed():
                    await self._closed(client, call)
                    spans.close()
                if isinstance(message, ResultMessage):
                    self._finish(message)
                yield self.progress

    async def approvals_stored(self) -> None:
        """Wait for the approval requests a hook is storing: the stop they set may end the SDK turn
        before the hook's write returns, and `turn.ended` must follow their `approval.required`."""
        while self._asking:
            await asyncio.gather(*self._asking, return_exceptions=True)
            self._asking = [asking for asking in self._asking if not asking.done()]

    async def _event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "tool_call.completed":
            call_id = data["tool_call_id"]
            if call_id in self.waiting:
                return
            call = self.calls.get(call_id) or ToolCall(id=call_id, name=data["name"], arguments={})
            if call_id not in self.calls and not self.surface.known(call.name):
                await self.gate.refused_unknown(call.name, call_id)  # Claude Code refused it before any hook
                self.denied.add(call_id)
            result = self.results.get(call_id)
            if result is None:  # a native tool Claude Code ran itself
                result = ToolResult(data["result"], is_error=data["is_error"])
                result = await self.journal.ledger_put(self.key(call_id), self.progress.loop_count, call, result)
            data = {**data, "is_error": result.is_error, "result": result.content}
            self.journal.tool_result(call, result)
            outcome = "denied" if call_id in self.denied else "error" if result.is_error else "ok"
            TOOL_CALLS.labels(tool=call.name, outcome=outcome).inc()
        self.journal.event(_EVENTS[kind].model_validate(data))

    async def _open_reply(self) -> None:
        guard = await self.services.governance.output_guard()
        self._reply = None if guard is None else ReplyGuard(guard, self.journal)

    async def _stop_if_blocked(self, client: ClaudeSDKClient) -> None:
        """An `output` deny ends the turn `guardrail_blocked`: Claude Code is interrupted, nothing more is sent."""
        blocked = self._reply.blocked if self._reply is not None else None
        if blocked is None or self.stop is not None:
            return
        self.stop = ("failed", {"code": GUARDRAIL_BLOCKED, "message": blocked_reason(blocked)})
        await client.interrupt()

    async def _closed(self, client: ClaudeSDKClient, call: ModelCall) -> None:
        if self._reply is not None:  # the conversation keeps the reply as it was released
            call.text, self._reply = self._reply.text, None
        self.had_tools = bool(call.tool_calls)
        self.progress.input_tokens += call.input_tokens
        self.progress.output_tokens += call.output_tokens
        if self._span is not None:  # the call's tokens (metrics) and its span's usage attributes
            self._span.finished(
                ModelResponse(call.text, call.tool_calls, call.input_tokens, call.output_tokens, call.stop_reason)
            )
            self._span = None
        self.progress.last_text = call.text
        message = ChatMessage(role="assistant", content=call.text, tool_calls=tuple(call.tool_calls))
        self.journal.assistant_message(message, ModelUsage(self.model, call.input_tokens, call.output_tokens))
        self._settle_quota(call.input_tokens + call.output_tokens)
        self._prompt_tokens = call.input_tokens
        if self.stop is None and (reason := self._over_budget(next_call=bool(call.tool_calls))) is not None:
            self.stop = ("budget_exceeded", self._exceeded("budget_exceeded", reason))
        elif call.tool_calls and self.stop is None:
            await self.reserve("")  # Claude Code makes the next call as soon as these calls are answered
        for tool_call in call.tool_calls:
            if self.stop is not None and tool_call.id not in self.results:
                self.waiting.add(tool_call.id)  # the turn stops before it: Claude Code's error for it is not its result
            self._recorded.setdefault(tool_call.id, asyncio.Event()).set()
        if self.stop is not None:
            await client.interrupt()

    async def reserve(self, prompt: str) -> bool:
        """Reserve the next model call's worst case from the tenant's quota (its prompt is about the last
        call's plus `prompt`); False, and the turn stops `budget_exceeded`, when the quota is spent."""
        if self.services.quota is None:
            return True
        worst = self._prompt_tokens + estimate_tokens(prompt, "anthropic") + self.max_tokens
        self._hold = await self.services.quota.reserve(worst)
        if self._hold is None:
            self.stop = ("budget_exceeded", self._exceeded("quota_exceeded", QUOTA_SPENT))
        return self._hold is not None

    def _over_budget(self, *, next_call: bool) -> str | None:
        """Why the turn's budget stops it: spent past a limit, or, with a model call to come, no room left for one.

        Checked when a call closes (Claude Code makes the next one by itself as soon as the tools
        answer) and before a run's first call; a call's own `max_tokens` is not capped by the rest.
        """
        budget = Budget(self.run.max_output_tokens, self.run.max_total_tokens)
        spent = self._spent()
        return overspent(budget, spent) or (spent_reason(budget, spent) if next_call else None)

    def _spent(self) -> Spent:
        return Spent(self.progress.input_tokens, self.progress.output_tokens, self.progress.loop_count)

    def _settle_quota(self, used: int) -> None:
        if self._hold is not None:
            self.journal.quota_settled(self._hold, used)
            self._hold = None

    def _exceeded(self, code: str, message: str) -> dict[str, Any]:
        return exceeded(code, message, self._spent())

    def stopped(self) -> Progress:
        """The progress of a run stopped before Claude Code was asked anything."""
        if self.stop is not None:
            self.progress.status, self.progress.error = self.stop
        return self.progress

    def _finish(self, result: ResultMessage) -> None:
        if self.stop is not None:
            status, error = self.stop
            self.progress.status = status
            self.progress.error = error
            return
        if result.is_error:
            self.progress.status = "failed"
            self.progress.error = {"code": "provider_error", "message": f"Claude Code ended with {result.subtype}"}
            return
        self.progress.status = "completed"
        self.progress.final_output = self.progress.last_text


async def _one(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message
