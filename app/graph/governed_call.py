"""One model call under the turn's budget and the tenant's quota: every model call of a turn goes through here.

The loop's call (`call_llm`) and an autonomous turn's PLAN and closing summary calls alike. Before
the call: the budget (app/governance/budget.py) must have room and caps the call's `max_tokens`,
and the tenant's quota reserves the call's worst case (app/runtime/store/quota.py). After it: the
reservation settles to the real usage, and the reply with its usage is recorded. A call that fails
or is cancelled midway still records what it cost (the estimated prompt and the streamed text).

When an `output` rule is in force, the reply's deltas pass the output guard
(app/governance/output_guard.py) on their way to the log, and the recorded reply is the guarded
text; a `deny` ends the call `guardrail_blocked`. With no such rule there is no guard on the path.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from app.governance.budget import Budget, Spent, call_cap, overspent, spent_reason
from app.governance.output_guard import GUARDRAIL_BLOCKED, OutputGuard, blocked_reason
from app.governance.policy import Decision
from app.providers.attachments import estimated_tokens
from app.providers.base import ChatMessage, ModelRequest, ModelResponse, Provider, ProviderError, TextDelta
from app.providers.call_ids import conversation_call_ids, with_own_ids
from app.providers.context_windows import MESSAGE_OVERHEAD_TOKENS, estimate_tokens
from app.providers.telemetry import ModelCall, model_call
from app.runtime.port.events import MessageCompleted, MessageDelta, UsageEvent, UsageKind
from app.runtime.port.journal import ModelUsage, QuotaGate, QuotaHold, TurnJournal


@dataclass(frozen=True, slots=True)
class Refused:
    """No call was made: `code` is `budget_exceeded` (the turn's budget) or `quota_exceeded` (the tenant's quota)."""

    code: str
    reason: str


@dataclass(frozen=True, slots=True)
class Unanswered:
    """The provider failed the call; what it cost is recorded all the same."""

    code: str
    message: str
    usage: ModelUsage


@dataclass(frozen=True, slots=True)
class Answered:
    response: ModelResponse
    message: ChatMessage
    """The assistant message recorded for the conversation."""
    over: str | None
    """Why the turn's budget is spent by this reply (a prompt larger than estimated, a reply cut at the
    budget's cap); None while it is within."""


CallOutcome = Refused | Unanswered | Answered


class OutputGuards(Protocol):
    async def output_guard(self) -> OutputGuard | Decision | None:
        """A guard for one reply, the deny that stands in for it, or None when no output rule is in force."""
        ...


@dataclass(frozen=True, slots=True)
class CallGovernance:
    """What one call is governed by: the turn's budget, what the turn has spent, the tenant's quota,
    and the policies' `output` rules."""

    budget: Budget
    spent: Spent
    quota: QuotaGate | None
    outputs: OutputGuards | None = None


LONG_DELTA_CHARS = 4096
"""A delta longer than this (a provider that sends its reply in one piece) is screened off the event loop."""


class _Blocked(Exception):
    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


async def governed_call(
    request: ModelRequest,
    governance: CallGovernance,
    *,
    provider: Provider,
    journal: TurnJournal,
    kind: UsageKind,
    call_ids: Iterable[str] | None = None,
) -> CallOutcome:
    """Make the call if the budget and the quota allow it; `request.max_tokens` is the model's own maximum.

    `call_ids`: the tool call ids the session's conversation holds (default: the prompt's), which the
    reply's calls are told apart from before anything records them (app/providers/call_ids.py).
    """
    budget, spent = governance.budget, governance.spent
    if (reason := spent_reason(budget, spent)) is not None:
        return Refused("budget_exceeded", reason)
    provider_name = str(request.model["provider"])
    prompt_tokens = prompt_estimate(request, provider_name)
    cap = call_cap(budget, spent, model_max_tokens=request.max_tokens, prompt_tokens=prompt_tokens)
    if cap < 1:
        reason = f"a prompt of about {prompt_tokens} tokens does not fit what is left of the turn's budget"
        return Refused("budget_exceeded", reason)
    model = model_name(request)
    guard = await governance.outputs.output_guard() if governance.outputs is not None else None
    if isinstance(guard, Decision):
        journal.decision(guard)
        return Unanswered(GUARDRAIL_BLOCKED, blocked_reason(guard), ModelUsage(model, 0, 0, kind=kind))
    hold = None
    if governance.quota is not None and (hold := await governance.quota.reserve(prompt_tokens + cap)) is None:
        return Refused("quota_exceeded", "the tenant's token quota for this period is spent")
    streamed: list[str] = []
    with model_call(provider_name, model, cap) as call:
        try:
            capped = dataclasses.replace(request, max_tokens=cap)
            if guard is None:
                response = await _stream(provider, journal, capped, call, streamed)
            else:
                response = await _guarded_stream(provider, journal, capped, call, streamed, guard)
        except (ProviderError, asyncio.CancelledError, _Blocked) as exc:
            usage = ModelUsage(model, prompt_tokens, estimate_tokens("".join(streamed), provider_name), kind=kind)
            journal.unanswered_call(usage)
            if hold is not None:
                journal.quota_settled(hold, usage.input_tokens + usage.output_tokens)
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, _Blocked):
                return Unanswered(GUARDRAIL_BLOCKED, blocked_reason(exc.decision), usage)
            call.failed(exc.code)
            return Unanswered(exc.code, exc.message, usage)
        taken = conversation_call_ids(request.messages) if call_ids is None else call_ids
        response = dataclasses.replace(response, tool_calls=with_own_ids(response.tool_calls, taken))
        call.finished(response)
    message = _record(journal, response, hold, ModelUsage(model, response.input_tokens, response.output_tokens, kind))
    after = Spent(spent.input_tokens + response.input_tokens, spent.output_tokens + response.output_tokens, spent.loops)
    over = overspent(budget, after)
    if over is None and cap < request.max_tokens and response.stop_reason == "max_tokens":
        over = "the reply was cut at the tokens left in the turn's budget"
    return Answered(response, message, over)


def _record(journal: TurnJournal, response: ModelResponse, hold: QuotaHold | None, usage: ModelUsage) -> ChatMessage:
    if hold is not None:
        journal.quota_settled(hold, response.input_tokens + response.output_tokens)
    journal.event(MessageCompleted(text=response.text, stop_reason=response.stop_reason or "end_turn"))
    journal.event(UsageEvent(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, kind=usage.kind))
    message = ChatMessage(role="assistant", content=response.text, tool_calls=tuple(response.tool_calls))
    journal.assistant_message(message, usage)
    return message


async def _stream(
    provider: Provider, journal: TurnJournal, request: ModelRequest, call: ModelCall, streamed: list[str]
) -> ModelResponse:
    async for item in provider.stream(request):
        if isinstance(item, TextDelta):
            streamed.append(item.text)
            await _delta(journal, call, item.text)
        else:
            return item
    raise ProviderError("provider_error", "the model stream ended without a response")


async def _guarded_stream(
    provider: Provider,
    journal: TurnJournal,
    request: ModelRequest,
    call: ModelCall,
    streamed: list[str],
    guard: OutputGuard,
) -> ModelResponse:
    """`_stream` through the guard: only released text is sent, the reply recorded is the guarded text;
    receipts of the rules that acted follow the reply's text. Raises `_Blocked` on a deny."""
    events = provider.stream(request)
    try:
        async for item in events:
            if not isinstance(item, TextDelta):
                response = item
                break
            streamed.append(item.text)
            await _delta(journal, call, await _fed(guard, item.text))
            if guard.blocked is not None:
                raise _Blocked(guard.blocked)
        else:
            raise ProviderError("provider_error", "the model stream ended without a response")
        raw = "".join(streamed)
        rest = response.text[len(raw) :] if response.text.startswith(raw) else ""
        await _delta(journal, call, guard.feed(rest) + guard.finish())
        if guard.blocked is not None:
            raise _Blocked(guard.blocked)
    finally:
        for decision in guard.decisions():
            journal.decision(decision)
        if (close := getattr(events, "aclose", None)) is not None:
            await close()
    return dataclasses.replace(response, text=guard.text)


async def _fed(guard: OutputGuard, text: str) -> str:
    """`guard.feed`, in a worker thread for a delta too long to scan on the event loop."""
    if len(text) <= LONG_DELTA_CHARS:
        return guard.feed(text)
    return await asyncio.to_thread(guard.feed, text)


async def _delta(journal: TurnJournal, call: ModelCall, text: str) -> None:
    """Send `text` on as a `message.delta`; after the call's first, give the loop up once.

    An SDK parsing a burst of chunks that arrived together never waits on the socket, so without
    that pause the followers would send the first token only after the whole burst was parsed.
    """
    if not text:
        return
    journal.event(MessageDelta(text=text))
    if call.text():
        await asyncio.sleep(0)


def model_name(request: ModelRequest) -> str:
    return str(request.model.get("name") or request.model["provider"])


def prompt_estimate(request: ModelRequest, provider: str) -> int:
    """Tokens the request's prompt likely costs (exact for the scripted provider: a token a word)."""
    texts = [request.system, *(m.content for m in request.messages)]
    attached = sum(estimated_tokens(a) for m in request.messages for a in m.attachments)
    if provider == "scripted":
        return sum(estimate_tokens(t, provider) for t in texts) + attached
    calls = [json.dumps([c.arguments for c in m.tool_calls]) for m in request.messages if m.tool_calls]
    specs = [json.dumps([t.name, t.description, t.input_schema]) for t in request.tools]
    overhead = MESSAGE_OVERHEAD_TOKENS * (len(request.messages) + 1)
    return overhead + attached + sum(estimate_tokens(t, provider) for t in [*texts, *calls, *specs])
