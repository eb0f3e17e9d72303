"""The think-act-observe loop's topology, declared once: the nodes, the fixed edges and the routed ones.

`build_graph()` compiles it as a LangGraph `StateGraph` (the declared graph: `get_graph()` draws it,
`GRAPH_DRIVER=pregel` runs it); `app/graph/loop.py` steps through the same tables without Pregel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.graph import END, START, StateGraph

from app.graph import edges
from app.graph.context import TurnContext
from app.graph.nodes.common import Node
from app.graph.nodes.context_nodes import assemble_context, validate_prompt
from app.graph.nodes.execute_tools import execute_tools
from app.graph.nodes.ingest import ingest_result, loop_limit_handler
from app.graph.nodes.llm import call_llm, parse_response
from app.graph.state import TurnState

Route = Callable[[TurnState], str]

NODES: dict[str, Node] = {
    "assemble_context": assemble_context,
    "validate_prompt": validate_prompt,
    "call_llm": call_llm,
    "parse_response": parse_response,
    "execute_tools": execute_tools,
    "ingest_result": ingest_result,
    "loop_limit_handler": loop_limit_handler,
}
FIXED: dict[str, str] = {
    "assemble_context": "validate_prompt",
    "call_llm": "parse_response",
    "loop_limit_handler": END,
}
"""The node that always follows each of these."""
ROUTED: dict[str, tuple[Route, tuple[str, ...]]] = {
    START: (edges.route_entry, ("assemble_context", "execute_tools", "parse_response")),
    "validate_prompt": (edges.after_validate, ("call_llm", END)),
    "parse_response": (edges.should_continue, ("execute_tools", "ingest_result", "loop_limit_handler", END)),
    "execute_tools": (edges.after_execute_tools, ("ingest_result", END)),
    "ingest_result": (edges.after_ingest, ("assemble_context", "loop_limit_handler", END)),
}
"""The nodes whose successor a pure function of the state picks, with every successor it may pick."""


def _on_loop(route: Route) -> Callable[[TurnState], Awaitable[str]]:
    """Run a (pure, sync) routing function on the event loop: LangGraph sends sync callables of an
    async run to a worker thread, a thread hop per edge for a few attribute reads."""

    async def routed(state: TurnState) -> str:
        return route(state)

    return routed


def build_graph() -> Any:
    graph = StateGraph(TurnState, context_schema=TurnContext)
    for name, node in NODES.items():
        graph.add_node(name, node)  # type: ignore[call-overload]
    for source, target in FIXED.items():
        graph.add_edge(source, target)
    for source, (route, targets) in ROUTED.items():
        graph.add_conditional_edges(source, _on_loop(route), list(targets))
    return graph.compile()
