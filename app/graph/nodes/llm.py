"""call_llm and parse_response: one streamed model call, and what it asked for.

The call goes through `governed_call` (app/graph/governed_call.py): the turn's budget and the
tenant's quota before it, its cost recorded after it, even when it fails or is cancelled midway.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.runtime import Runtime

from app.governance.budget import Spent, exceeded
from app.graph.context import TurnContext
from app.graph.governed_call import Answered, CallGovernance, Refused, governed_call
from app.graph.nodes.common import failed, traced
from app.graph.nodes.structured import structured_answer
from app.graph.state import TurnState, budget_of, spent_of
from app.providers.base import ModelRequest, ToolSpec
from app.providers.call_ids import conversation_call_ids
from app.runtime.port.events import ToolCallRequested
from app.tools.mcp_gateway import McpGatewayUnavailable


@traced("call_llm")
async def call_llm(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    try:
        tools = await ctx.tools.specs()
    except McpGatewayUnavailable as exc:
        return failed("mcp_gateway_unavailable", str(exc))
    spent = spent_of(state)
    governance = CallGovernance(budget_of(state), spent, ctx.quota, ctx.governance)
    conversation = [*state.get("history", []), *state.get("new_messages", [])]
    request = dataclasses.replace(_request(state, ctx, tools), files=await _files(state, ctx))
    outcome = await governed_call(
        request,
        governance,
        provider=ctx.provider,
        journal=ctx.journal,
        kind="model",
        call_ids=conversation_call_ids(conversation),
    )
    if isinstance(outcome, Refused):
        return _stopped(state, outcome.code, outcome.reason, spent)
    if isinstance(outcome, Answered):
        return _answered(state, outcome)
    usage = outcome.usage
    return {**failed(outcome.code, outcome.message), **_plus(state, usage.input_tokens, usage.output_tokens)}


async def _files(state: TurnState, ctx: TurnContext) -> dict[str, bytes]:
    ids = [a.file_id for m in state.get("prompt", []) for a in m.attachments]
    if not ids or ctx.files is None:
        return {}
    return await ctx.files.read(ctx.ident.tenant_id, ids)


def _answered(state: TurnState, outcome: Answered) -> dict[str, Any]:
    response = outcome.response
    tokens = _plus(state, response.input_tokens, response.output_tokens)
    update = {
        "pending": response.tool_calls,
        "results": {},
        "last_text": response.text,
        "new_messages": [*state.get("new_messages", []), outcome.message],
        "model_calls": state.get("model_calls", 0) + 1,
        **tokens,
    }
    if outcome.over is None:
        return update
    spent = Spent(tokens["input_tokens"], tokens["output_tokens"], state.get("loop_count", 0))
    return {**update, "pending": [], **_stopped(state, "budget_exceeded", outcome.over, spent, text=response.text)}


def _stopped(state: TurnState, code: str, reason: str, spent: Spent, *, text: str | None = None) -> dict[str, Any]:
    """End the turn `budget_exceeded` (the budget, or with `error.code` `quota_exceeded` the quota)."""
    final = text if text is not None else state.get("last_text", "")
    return {"status": "budget_exceeded", "error": exceeded(code, reason, spent), "final_output": final or None}


def _plus(state: TurnState, input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": state.get("input_tokens", 0) + input_tokens,
        "output_tokens": state.get("output_tokens", 0) + output_tokens,
    }


def _request(state: TurnState, ctx: TurnContext, tools: list[ToolSpec]) -> ModelRequest:
    return ModelRequest(
        model=ctx.model,
        system=state.get("system", ""),
        messages=state.get("prompt", []),
        tools=tools,
        max_tokens=int(ctx.model.get("max_tokens", 1024)),
        call_index=state.get("model_calls", 0),
        output_schema=ctx.output_schema,
    )


@traced("parse_response")
async def parse_response(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    pending = state.get("pending", [])
    for call in pending:
        runtime.context.journal.event(ToolCallRequested(tool_call_id=call.id, name=call.name, arguments=call.arguments))
    if pending:
        return {}
    text = state.get("last_text", "")
    schema = runtime.context.output_schema
    if schema is None:
        return {"final_output": text}
    return structured_answer(state, text, schema)
