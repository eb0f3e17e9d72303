"""Helpers every node shares: node events and failure updates."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.runtime import Runtime

from app.graph.context import TurnContext
from app.graph.state import TurnState
from app.runtime.port.events import NodeEnded, NodeStarted

Node = Callable[[TurnState, Runtime[TurnContext]], Awaitable[dict[str, Any]]]


def traced(name: str) -> Callable[[Node], Node]:
    """Wrap a node so it records `node.started` and `node.ended` around its work (a continued run does
    not record again the ones its lost run stored: it redoes that work silently)."""

    def wrap(node: Node) -> Node:
        @functools.wraps(node)
        async def run(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
            journal, loop, continued = runtime.context.journal, state.get("loop_count", 0), runtime.context.continued
            key = f"{name}:{loop}"
            if continued is None or not continued.stored("node.started", key):
                journal.event(NodeStarted(node=name, loop=loop))
            update = await node(state, runtime)
            if continued is None or not continued.stored("node.ended", key):
                journal.event(NodeEnded(node=name, loop=loop))
            return update

        return run

    return wrap


def failed(code: str, message: str) -> dict[str, Any]:
    return {"status": "failed", "error": {"code": code, "message": message}}
