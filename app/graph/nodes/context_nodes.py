"""assemble_context and validate_prompt: what the model will see, and whether it may see it."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from app.context.builtin import engine_history, engine_system_prompt
from app.context.engine_client import ContextEngineError, ContextEngineUnavailable
from app.governance.gate import judge_input
from app.governance.policy import Decision
from app.graph.context import TurnContext
from app.graph.nodes.builtin_context import builtin_prompt
from app.graph.nodes.common import failed, traced
from app.graph.state import TurnState
from app.providers.base import ChatMessage
from app.runtime.port.events import ContextDegraded


@traced("assemble_context")
async def assemble_context(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    new_messages = state.get("new_messages", [])
    if ctx.context_engine is not None and ctx.context_token is not None:
        try:
            assembled = await ctx.context_engine.assemble_context(
                ctx.context_token(),
                session_id=str(ctx.ident.session_id),
                agent_id=str(ctx.ident.agent_id),
                query=state["input"],
            )
        except ContextEngineError as exc:
            ctx.journal.event(ContextDegraded(component="assemble", error=str(exc)))
        else:
            turn_start = [ChatMessage(role="user", content=state["input"])]
            prompt = engine_history(assembled) + turn_start + _this_turn(state) + new_messages
            return {"system": engine_system_prompt(assembled), "prompt": prompt}
    return await builtin_prompt(state, ctx)


def _this_turn(state: TurnState) -> list[ChatMessage]:
    """On a resumed run, the stored messages of this turn after its user message (engine mode)."""
    history = state.get("history") or []
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "user" and history[index].tool_call_id is None:
            return history[index + 1 :]
    return []


@traced("validate_prompt")
async def validate_prompt(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    violation = await _guardrails(state, ctx)
    if violation is not None:
        return violation
    continued = state.get("continued")
    if state.get("loop_count", 0) > 0 or state.get("resume") or (continued is not None and continued.input_judged):
        return {}
    policy = await ctx.governance.current("pre_llm")
    decision = policy if isinstance(policy, Decision) else await judge_input(policy, state["input"])
    ctx.journal.decision(decision)
    if decision.verdict != "allow":
        return failed("policy_denied", decision.reason or f"denied by policy {decision.rule_id}")
    return {}


async def _guardrails(state: TurnState, ctx: TurnContext) -> dict[str, Any] | None:
    """Advisory and fail-open: an unreachable engine is audited, a real violation fails the turn."""
    if ctx.context_engine is None or ctx.context_token is None:
        return None
    hashes = list(ctx.config.context.guardrail_hashes)
    try:
        result = await ctx.context_engine.validate_prompt(
            ctx.context_token(),
            session_id=str(ctx.ident.session_id),
            guardrail_hashes=hashes,
            prompt=state.get("system", ""),
        )
    except ContextEngineError as exc:
        kind = "unreachable" if isinstance(exc, ContextEngineUnavailable) else "error"
        await ctx.journal.audit("integrity_check_skipped", {"reason": kind, "error": str(exc)})
        ctx.journal.event(ContextDegraded(component="validate", error=str(exc)))
        return None
    if result.valid:
        return None
    detail = "; ".join(f"{v.get('code')}: {v.get('message')}" for v in result.violations) or "prompt is not valid"
    return failed("guardrail_violation", detail)
