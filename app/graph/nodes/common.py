"""Helpers every node shares: node events, failure updates, decision receipts."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.runtime import Runtime

from app.core.metrics import POLICY_DECISIONS
from app.governance.policy import Decision
from app.graph.context import TurnContext
from app.graph.state import TurnState
from app.turns.store import DECISIONS, decision_row

Node = Callable[[TurnState, Runtime[TurnContext]], Awaitable[dict[str, Any]]]


def traced(name: str) -> Callable[[Node], Node]:
    """Wrap a node so it emits `node.started` and `node.ended` around its work."""

    def wrap(node: Node) -> Node:
        @functools.wraps(node)
        async def run(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
            emit, loop = runtime.context.emit, state.get("loop_count", 0)
            emit("node.started", {"node": name, "loop": loop})
            update = await node(state, runtime)
            emit("node.ended", {"node": name, "loop": loop})
            return update

        return run

    return wrap


def failed(code: str, message: str) -> dict[str, Any]:
    return {"status": "failed", "error": {"code": code, "message": message}}


def record_decision(
    ctx: TurnContext, decision: Decision, *, tool_call_id: str | None = None, tool_name: str | None = None
) -> None:
    """Stage the receipt (stored with the turn's next batch, before its end) and tell the stream."""
    POLICY_DECISIONS.labels(point=decision.point, verdict=decision.verdict).inc()
    ctx.journal.stage(
        DECISIONS,
        decision_row(
            ctx.ident,
            point=decision.point,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            verdict=decision.verdict,
            rule_id=decision.rule_id,
            reason=decision.reason,
            policy_hash=decision.policy_hash,
        ),
    )
    ctx.emit(
        "policy.decision",
        {
            "point": decision.point,
            "tool_call_id": tool_call_id,
            "verdict": decision.verdict,
            "rule_id": decision.rule_id,
            "reason": decision.reason,
            "policy_hash": decision.policy_hash,
        },
    )
