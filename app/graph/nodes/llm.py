"""call_llm and parse_response: one streamed model call, and what it asked for.

Before the call: the turn's budget (app/governance/budget.py) and the tenant's quota
(app/runtime/quota.py); the call's `max_tokens` is capped by what the budget leaves. A call that
fails or is cancelled midway still records what it cost (the estimated prompt and the streamed text).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from langgraph.runtime import Runtime

from app.governance.budget import Spent, call_cap, exceeded, overspent, spent_reason
from app.graph.context import TurnContext
from app.graph.nodes.common import failed, traced
from app.graph.state import TurnState, budget_of, spent_of
from app.graph.telemetry import ModelCall, model_call
from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError, TextDelta, ToolSpec
from app.providers.context_windows import MESSAGE_OVERHEAD_TOKENS, estimate_tokens
from app.runtime.events import MessageCompleted, MessageDelta, ToolCallRequested, UsageEvent
from app.runtime.journal import ModelUsage, QuotaHold
from app.tools.mcp_gateway import McpGatewayUnavailable


@traced("call_llm")
async def call_llm(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    try:
        tools = await ctx.tools.specs()
    except McpGatewayUnavailable as exc:
        return failed("mcp_gateway_unavailable", str(exc))
    budget, spent = budget_of(state), spent_of(state)
    if (reason := spent_reason(budget, spent)) is not None:
        return _stopped(state, "budget_exceeded", reason, spent)
    request = _request(state, ctx, tools)
    prompt_tokens = prompt_estimate(request, str(ctx.model["provider"]))
    model_max = int(ctx.model.get("max_tokens", 1024))
    cap = call_cap(budget, spent, model_max_tokens=model_max, prompt_tokens=prompt_tokens)
    if cap < 1:
        reason = f"a prompt of about {prompt_tokens} tokens does not fit what is left of the turn's budget"
        return _stopped(state, "budget_exceeded", reason, spent)
    hold = None
    if ctx.quota is not None and (hold := await ctx.quota.reserve(prompt_tokens + cap)) is None:
        return _stopped(state, "quota_exceeded", "the tenant's token quota for this period is spent", spent)
    streamed: list[str] = []
    with model_call(str(ctx.model["provider"]), _model(ctx), cap) as call:
        try:
            response = await _stream(ctx, dataclasses.replace(request, max_tokens=cap), call, streamed)
        except (ProviderError, asyncio.CancelledError) as exc:
            usage = _unanswered(ctx, prompt_tokens, "".join(streamed), hold)
            if isinstance(exc, asyncio.CancelledError):
                raise
            call.failed(exc.code)
            return {**failed(exc.code, exc.message), **_plus(state, usage.input_tokens, usage.output_tokens)}
        call.finished(response)
    return _answered(state, ctx, response, hold, capped=cap < model_max)


def _answered(
    state: TurnState, ctx: TurnContext, response: ModelResponse, hold: QuotaHold | None, *, capped: bool
) -> dict[str, Any]:
    journal = ctx.journal
    if hold is not None:
        journal.quota_settled(hold, response.input_tokens + response.output_tokens)
    journal.event(MessageCompleted(text=response.text, stop_reason=response.stop_reason or "end_turn"))
    journal.event(UsageEvent(input_tokens=response.input_tokens, output_tokens=response.output_tokens))
    assistant = ChatMessage(role="assistant", content=response.text, tool_calls=tuple(response.tool_calls))
    journal.assistant_message(assistant, ModelUsage(_model(ctx), response.input_tokens, response.output_tokens))
    tokens = _plus(state, response.input_tokens, response.output_tokens)
    update = {
        "pending": response.tool_calls,
        "results": {},
        "last_text": response.text,
        "new_messages": [*state.get("new_messages", []), assistant],
        "model_calls": state.get("model_calls", 0) + 1,
        **tokens,
    }
    spent = Spent(tokens["input_tokens"], tokens["output_tokens"], state.get("loop_count", 0))
    reason = overspent(budget_of(state), spent)
    if reason is None and capped and response.stop_reason == "max_tokens":
        reason = "the reply was cut at the tokens left in the turn's budget"
    if reason is not None:
        return {**update, "pending": [], **_stopped(state, "budget_exceeded", reason, spent, text=response.text)}
    return update


def _unanswered(ctx: TurnContext, prompt_tokens: int, streamed: str, hold: QuotaHold | None) -> ModelUsage:
    """What a call without a reply cost: its prompt and what it streamed (estimated; billed all the same)."""
    usage = ModelUsage(_model(ctx), prompt_tokens, estimate_tokens(streamed, str(ctx.model["provider"])))
    ctx.journal.unanswered_call(usage)
    if hold is not None:
        ctx.journal.quota_settled(hold, usage.input_tokens + usage.output_tokens)
    return usage


def _stopped(state: TurnState, code: str, reason: str, spent: Spent, *, text: str | None = None) -> dict[str, Any]:
    """End the turn `budget_exceeded` (the budget, or with `error.code` `quota_exceeded` the quota)."""
    final = text if text is not None else state.get("last_text", "")
    return {"status": "budget_exceeded", "error": exceeded(code, reason, spent), "final_output": final or None}


def _plus(state: TurnState, input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": state.get("input_tokens", 0) + input_tokens,
        "output_tokens": state.get("output_tokens", 0) + output_tokens,
    }


def _model(ctx: TurnContext) -> str:
    return str(ctx.model.get("name") or ctx.model["provider"])


def prompt_estimate(request: ModelRequest, provider: str) -> int:
    """Tokens the request's prompt likely costs (exact for the scripted provider: a token a word)."""
    texts = [request.system, *(m.content for m in request.messages)]
    if provider == "scripted":
        return sum(estimate_tokens(t, provider) for t in texts)
    calls = [json.dumps([c.arguments for c in m.tool_calls]) for m in request.messages if m.tool_calls]
    specs = [json.dumps([t.name, t.description, t.input_schema]) for t in request.tools]
    overhead = MESSAGE_OVERHEAD_TOKENS * (len(request.messages) + 1)
    return overhead + sum(estimate_tokens(t, provider) for t in [*texts, *calls, *specs])


def _request(state: TurnState, ctx: TurnContext, tools: list[ToolSpec]) -> ModelRequest:
    return ModelRequest(
        model=ctx.model,
        system=state.get("system", ""),
        messages=state.get("prompt", []),
        tools=tools,
        max_tokens=int(ctx.model.get("max_tokens", 1024)),
        call_index=state.get("model_calls", 0),
    )


async def _stream(ctx: TurnContext, request: ModelRequest, call: ModelCall, streamed: list[str]) -> ModelResponse:
    journal = ctx.journal
    async for item in ctx.provider.stream(request):
        if isinstance(item, TextDelta):
            call.text()
            streamed.append(item.text)
            journal.event(MessageDelta(text=item.text))
        else:
            return item
    raise ProviderError("provider_error", "the model stream ended without a response")


@traced("parse_response")
async def parse_response(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    pending = state.get("pending", [])
    for call in pending:
        runtime.context.journal.event(ToolCallRequested(tool_call_id=call.id, name=call.name, arguments=call.arguments))
    if pending:
        return {}
    return {"final_output": state.get("last_text", "")}
