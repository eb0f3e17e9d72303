"""The loop stepped directly: the same nodes and edges as the compiled graph, without Pregel's per-step work.

A turn's graph has no parallel branches, no reducers (every key of `TurnState` is last-value) and no
checkpointer (the turn's store is its durability), so a step is: call the node, merge its update
into the state, pick the next node. Pregel spends about 0.3 ms of CPU on each step for channels,
tasks and stream plumbing this graph does not use (docs/performance.md); `GRAPH_DRIVER=pregel` runs
the compiled `StateGraph` instead, and tests/graph/test_drivers.py holds both to the same events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from langgraph.graph import END, START
from langgraph.runtime import Runtime

from app.graph.build import FIXED, NODES, ROUTED
from app.graph.context import TurnContext
from app.graph.state import TurnState


def successor(node: str, state: TurnState) -> str:
    fixed = FIXED.get(node)
    if fixed is not None:
        return fixed
    route, targets = ROUTED[node]
    target = route(state)
    if target not in targets:
        raise ValueError(f"{node} routed to {target!r}, not one of {targets}")
    return target


async def stepped(state: TurnState, context: TurnContext) -> AsyncIterator[TurnState]:
    """The state after each node, as LangGraph's `stream_mode="values"` yields it (the input first)."""
    runtime = Runtime(context=context)
    yield state
    node = successor(START, state)
    while node != END:
        update = await NODES[node](state, runtime)
        state = {**state, **update}  # type: ignore[typeddict-item]
        yield state
        node = successor(node, state)
