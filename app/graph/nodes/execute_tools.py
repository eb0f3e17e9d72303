"""execute_tools: per call, in order — known, blacklist, skip-done, policy (or the human's decision), execute.

The policy set is read once per batch, before its first call: every call of a batch is judged by the
same rules, and a batch of five calls costs one read, not five.

Every tool the model may call is judged here, MCP tools included: the gateway enforces its own rules
too, but only a decision taken here leaves a receipt on this turn, and a name nobody offered never
leaves the service. A call that needs a human interrupts the batch: every later call of the batch
that needs one too gets its approval at once, calls that already ran keep their results, the rest
wait for the resume.

A result is judged by the `tool_result` rules once the ledger holds it: the ledger keeps what the
tool returned (exactly-once), the event log and the conversation get what the model may see.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.runtime import Runtime

from app.core import tracing
from app.governance import receipts
from app.governance.gate import judged_result
from app.governance.policy import HASH_UNAVAILABLE, Decision, PolicySet, blacklist_decision, decide_tool
from app.graph.context import TurnContext
from app.graph.nodes.common import failed, traced
from app.graph.state import HumanDecision, TurnState
from app.providers.base import ToolCall
from app.providers.telemetry import tool_call, tool_settled
from app.runtime.port.events import ToolCallCompleted
from app.runtime.port.journal import ApprovalRequest
from app.tools.base import ToolResult
from app.tools.ledger_keys import idempotency_key
from app.tools.mcp_gateway import McpGatewayUnavailable


@dataclasses.dataclass(frozen=True, slots=True)
class Gate:
    call: ToolCall
    decision: Decision
    result: str | None = None
    """A `tool_result` gate: the call ran and this result waits for the human."""


@traced("execute_tools")
async def execute_tools(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    ctx = runtime.context
    loop = state.get("loop_count", 0)
    humans = state.get("decisions") or {}
    results = dict(state.get("results", {}))
    pending = state.get("pending", [])
    if all(call.id in results for call in pending):
        return {"results": results}
    policy = await ctx.governance.current("tool")
    try:
        for index, call in enumerate(pending):
            if call.id in results:
                continue
            outcome = await _one_call(ctx, call, loop, humans.get(call.id), policy)
            if isinstance(outcome, Gate):
                await _request_approvals(ctx, outcome, pending[index + 1 :], loop, humans, policy)
                return {"results": results, "status": "interrupted"}
            results[call.id] = outcome
    except McpGatewayUnavailable as exc:
        return {**failed("mcp_gateway_unavailable", str(exc)), "results": results}
    return {"results": results}


async def _one_call(
    ctx: TurnContext, call: ToolCall, loop: int, human: HumanDecision | None, policy: PolicySet | Decision
) -> ToolResult | Gate:
    """`policy`: the set in force, read once for the batch (every call of it is judged by the same rules)."""
    key = idempotency_key(str(ctx.ident.session_id), str(ctx.ident.turn_id), call.id)
    if ctx.continued is not None:
        sent = await ctx.journal.ledger_dispatched(key)
        if sent is not None:  # judged and sent by the lost run: sent again as it was, under its key
            return await _send(ctx, dataclasses.replace(call, arguments=sent), key, loop, policy)
    if not await ctx.tools.known(call.name):
        policy_hash = policy.policy_hash if isinstance(policy, PolicySet) else HASH_UNAVAILABLE
        return await _deny(ctx, call, key, loop, receipts.unknown_tool(call.name, policy_hash))
    blacklisted = blacklist_decision(policy, call.name) if isinstance(policy, PolicySet) else None
    if blacklisted is not None:
        return await _deny(ctx, call, key, loop, blacklisted)
    refused = ctx.tools.refusal(call, policy.policy_hash if isinstance(policy, PolicySet) else HASH_UNAVAILABLE)
    if refused is not None:
        return await _deny(ctx, call, key, loop, refused)
    stored = await ctx.journal.ledger_get(key) if ctx.restored else None
    if stored is not None:
        if human is not None and human.get("result") is not None:
            return _result_as_the_human_decided(ctx, call, stored, human, policy)
        seen = await _screened(ctx, call, stored, policy)
        if (
            not isinstance(seen, Gate)
            and ctx.continued is not None
            and not ctx.continued.stored("tool_call.completed", call.id)
        ):
            _completed(ctx, call, seen)
        return seen
    if isinstance(policy, Decision):  # the set could not be read: fail closed, even over a human's approval
        return await _deny(ctx, call, key, loop, policy)
    if human is not None:
        return await _as_the_human_decided(ctx, call, key, loop, human, policy)
    decision = decide_tool(policy, call.name, call.arguments)
    if decision.verdict == "deny":
        return await _deny(ctx, call, key, loop, decision)
    ctx.journal.decision(decision, tool_call_id=call.id, tool_name=call.name)
    if decision.verdict == "requires_approval":
        return Gate(call, decision)
    return await _execute(ctx, call, key, loop, policy)


async def _as_the_human_decided(
    ctx: TurnContext, call: ToolCall, key: str, loop: int, human: HumanDecision, policy: PolicySet
) -> ToolResult | Gate:
    """The human's decision replaces the policy check; its receipt names who, and what they saw and what ran."""
    approve = human["decision"] == "approve"
    edited = human["arguments"] if approve else None  # edited to {} is an edit too
    _receipt_of(ctx, call, human, edited=edited, policy_hash=policy.policy_hash)
    if not approve:
        reason = human["reason"] or "no reason given"
        denial = ToolResult(f"denied by a human: {reason}", is_error=True)
        return await _settle(ctx, call, key, loop, denial, denied=True)
    if edited is not None:
        call = dataclasses.replace(call, arguments=edited)
    return await _execute(ctx, call, key, loop, policy)


def _receipt_of(
    ctx: TurnContext, call: ToolCall, human: HumanDecision, *, edited: dict[str, Any] | None, policy_hash: str
) -> None:
    """The receipt of a human's decision on a call: who, what they saw, what they edited."""
    receipt = receipts.human(
        approve=human["decision"] == "approve",
        decided_by=human.get("decided_by"),
        reason=human["reason"],
        rule_id=human.get("rule_id"),
        seen=call.arguments,
        edited=edited,
        policy_hash=policy_hash,
    )
    ctx.journal.decision(receipt, tool_call_id=call.id, tool_name=call.name)


def _result_as_the_human_decided(
    ctx: TurnContext, call: ToolCall, stored: ToolResult, human: HumanDecision, policy: PolicySet | Decision
) -> ToolResult:
    """A result a `tool_result` rule held for a human: approved, the text the human saw goes into the
    prompt; denied, a refusal. The ledger keeps what the tool returned either way."""
    approve = human["decision"] == "approve"
    _receipt_of(ctx, call, human, edited=None, policy_hash=policy.policy_hash)
    if approve:
        seen = ToolResult(human.get("result") or "", is_error=stored.is_error)
    else:
        seen = ToolResult(f"denied by a human: {human['reason'] or 'no reason given'}", is_error=True)
    _completed(ctx, call, seen)
    return seen


async def _execute(ctx: TurnContext, call: ToolCall, key: str, loop: int, policy: PolicySet) -> ToolResult | Gate:
    await ctx.journal.dispatched(key, loop, call)
    return await _send(ctx, call, key, loop, policy)


async def _send(
    ctx: TurnContext, call: ToolCall, key: str, loop: int, policy: PolicySet | Decision
) -> ToolResult | Gate:
    with tool_call(call.name, call.id, mcp=ctx.tools.is_mcp(call.name)) as span:
        result = await ctx.tools.run(call, key)
        if result.is_error:
            tracing.set_error(span, "tool_error")
    return await _settle(ctx, call, key, loop, result, policy=policy)


async def _deny(ctx: TurnContext, call: ToolCall, key: str, loop: int, decision: Decision) -> ToolResult | Gate:
    ctx.journal.decision(decision, tool_call_id=call.id, tool_name=call.name)
    reason = decision.reason or f"rule {decision.rule_id}"
    denial = ToolResult(f"denied by policy: {reason}", is_error=True)
    return await _settle(ctx, call, key, loop, denial, denied=True)


async def _settle(
    ctx: TurnContext,
    call: ToolCall,
    key: str,
    loop: int,
    result: ToolResult,
    *,
    denied: bool = False,
    policy: PolicySet | Decision | None = None,
) -> ToolResult | Gate:
    """Ledger first, then use: if the key was already recorded, the stored result is the result.
    A tool's own result (`policy` given) then passes the `tool_result` rules, which may hold it for a human."""
    result = await ctx.journal.ledger_put(key, loop, call, result)
    tool_settled(call.name, is_error=result.is_error, denied=denied)
    seen = result if policy is None else await _screened(ctx, call, result, policy)
    if not isinstance(seen, Gate):
        _completed(ctx, call, seen)
    return seen


async def _screened(
    ctx: TurnContext, call: ToolCall, result: ToolResult, policy: PolicySet | Decision
) -> ToolResult | Gate:
    """What the model sees of a result: redacted, or a refusal when a rule denies it (or the rules
    cannot be read), or a gate when a rule wants a human to see it first; the result itself when no
    `tool_result` rule takes this tool."""
    judged = await judged_result(policy, call.name, result.content)
    if judged is None:
        return result
    for decision in judged.decisions:
        ctx.journal.decision(decision, tool_call_id=call.id, tool_name=call.name)
    if judged.gated is not None:
        return Gate(call, judged.gated, judged.text)
    return ToolResult(judged.text, is_error=result.is_error or judged.denied is not None)


def _completed(ctx: TurnContext, call: ToolCall, result: ToolResult) -> None:
    ctx.journal.event(
        ToolCallCompleted(tool_call_id=call.id, name=call.name, is_error=result.is_error, result=result.content)
    )


async def _request_approvals(
    ctx: TurnContext,
    gate: Gate,
    later: list[ToolCall],
    loop: int,
    humans: dict[str, HumanDecision],
    policy: PolicySet | Decision,
) -> None:
    gated = [gate]
    # a later call a human already decided keeps that decision (and its approval row)
    later = [call for call in later if call.id not in humans]
    if later and isinstance(policy, PolicySet):
        gated += await _also_gated(ctx, policy, later)
    await ctx.journal.request_approvals([ApprovalRequest(g.call, loop, g.decision, g.result) for g in gated])


async def _also_gated(ctx: TurnContext, policy: PolicySet, calls: list[ToolCall]) -> list[Gate]:
    gates = []
    for call in calls:
        if not await ctx.tools.known(call.name) or blacklist_decision(policy, call.name) is not None:
            continue
        decision = decide_tool(policy, call.name, call.arguments)
        if decision.verdict == "requires_approval":
            ctx.journal.decision(decision, tool_call_id=call.id, tool_name=call.name)
            gates.append(Gate(call, decision))
    return gates
