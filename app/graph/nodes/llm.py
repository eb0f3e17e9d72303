"""call_llm and parse_response: one streamed model call, and what it asked for."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from app.graph.context import TurnContext
from app.graph.nodes.common import failed, traced
from app.graph.state import TurnState
from app.graph.telemetry import ModelCall, model_call
from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError, TextDelta, ToolSpec
from app.runtime.events import MessageCompleted, MessageDelta, ToolCallRequested, UsageEvent
from app.runtime.journal import ModelUsage
from app.tools.mcp_gateway import McpGatewayUnavailable


@traced("call_llm")
async def call_llm(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    try:
        tools = await ctx.tools.specs()
    except McpGatewayUnavailable as exc:
        return failed("mcp_gateway_unavailable", str(exc))
    model = str(ctx.model.get("name") or ctx.model["provider"])
    request = _request(state, ctx, tools)
    with model_call(str(ctx.model["provider"]), model, request.max_tokens) as call:
        try:
            response = await _stream(ctx, request, call)
        except ProviderError as exc:
            call.failed(exc.code)
            return failed(exc.code, exc.message)
        call.finished(response)
    journal = ctx.journal
    journal.event(MessageCompleted(text=response.text))
    journal.event(UsageEvent(input_tokens=response.input_tokens, output_tokens=response.output_tokens))
    assistant = ChatMessage(role="assistant", content=response.text, tool_calls=tuple(response.tool_calls))
    journal.assistant_message(assistant, ModelUsage(model, response.input_tokens, response.output_tokens))
    return {
        "pending": response.tool_calls,
        "results": {},
        "last_text": response.text,
        "new_messages": [*state.get("new_messages", []), assistant],
        "model_calls": state.get("model_calls", 0) + 1,
        "input_tokens": state.get("input_tokens", 0) + response.input_tokens,
        "output_tokens": state.get("output_tokens", 0) + response.output_tokens,
    }


def _request(state: TurnState, ctx: TurnContext, tools: list[ToolSpec]) -> ModelRequest:
    remaining = max(state["max_output_tokens"] - state.get("output_tokens", 0), 1)
    return ModelRequest(
        model=ctx.model,
        system=state.get("system", ""),
        messages=state.get("prompt", []),
        tools=tools,
        max_tokens=min(int(ctx.model.get("max_tokens", 1024)), remaining),
        call_index=state.get("model_calls", 0),
    )


async def _stream(ctx: TurnContext, request: ModelRequest, call: ModelCall) -> ModelResponse:
    journal = ctx.journal
    async for item in ctx.provider.stream(request):
        if isinstance(item, TextDelta):
            call.text()
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
