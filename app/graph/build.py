"""build_graph(): the think-act-observe loop, compiled once per process."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.graph import END, START, StateGraph

from app.graph import edges
from app.graph.context import TurnContext
from app.graph.nodes.context_nodes import assemble_context, validate_prompt
from app.graph.nodes.execute_tools import execute_tools
from app.graph.nodes.ingest import ingest_result, loop_limit_handler
from app.graph.nodes.llm import call_llm, parse_response
from app.graph.state import TurnState


def _on_loop(route: Callable[[TurnState], str]) -> Callable[[TurnState], Awaitable[str]]:
    """Run a (pure, sync) routing function on the event loop: LangGraph sends sync callables of an
    async run to a worker thread, a thread hop per edge for a few attribute reads."""

    async def routed(state: TurnState) -> str:
        return route(state)

    return routed


def build_graph() -> Any:
    graph = StateGraph(TurnState, context_schema=TurnContext)
    for name, node in [
        ("assemble_context", assemble_context),
        ("validate_prompt", validate_prompt),
        ("call_llm", call_llm),
        ("parse_response", parse_response),
        ("execute_tools", execute_tools),
        ("ingest_result", ingest_result),
        ("loop_limit_handler", loop_limit_handler),
    ]:
        graph.add_node(name, node)  # type: ignore[call-overload]
    graph.add_conditional_edges(
        START, _on_loop(edges.route_entry), ["assemble_context", "execute_tools", "parse_response"]
    )
    graph.add_edge("assemble_context", "validate_prompt")
    graph.add_conditional_edges("validate_prompt", _on_loop(edges.after_validate), ["call_llm", END])
    graph.add_edge("call_llm", "parse_response")
    graph.add_conditional_edges(
        "parse_response", _on_loop(edges.should_continue), ["execute_tools", "ingest_result", "loop_limit_handler", END]
    )
    graph.add_conditional_edges("execute_tools", _on_loop(edges.after_execute_tools), ["ingest_result", END])
    graph.add_conditional_edges(
        "ingest_result", _on_loop(edges.after_ingest), ["assemble_context", "loop_limit_handler", END]
    )
    graph.add_edge("loop_limit_handler", END)
    return graph.compile()
