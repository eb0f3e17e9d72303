"""build_graph(): the compiled loop has the contract's nodes and wires them as DESIGN.md describes."""

from __future__ import annotations

from app.graph.build import build_graph

LOOP_NODES = {
    "assemble_context",
    "validate_prompt",
    "call_llm",
    "parse_response",
    "execute_tools",
    "ingest_result",
    "loop_limit_handler",
}


def _edges() -> set[tuple[str, str]]:
    graph = build_graph().get_graph()
    return {(edge.source, edge.target) for edge in graph.edges}


def test_graph_has_every_loop_node() -> None:
    assert set(build_graph().get_graph().nodes) >= LOOP_NODES


def test_graph_wires_the_think_act_observe_cycle() -> None:
    edges = _edges()
    for step in [
        ("__start__", "assemble_context"),
        ("assemble_context", "validate_prompt"),
        ("validate_prompt", "call_llm"),
        ("call_llm", "parse_response"),
        ("parse_response", "execute_tools"),
        ("execute_tools", "ingest_result"),
        ("ingest_result", "assemble_context"),
    ]:
        assert step in edges, step


def test_graph_has_the_terminals_and_the_resume_entry() -> None:
    edges = _edges()
    for step in [
        ("__start__", "execute_tools"),
        ("validate_prompt", "__end__"),
        ("parse_response", "loop_limit_handler"),
        ("ingest_result", "loop_limit_handler"),
        ("execute_tools", "__end__"),
        ("loop_limit_handler", "__end__"),
    ]:
        assert step in edges, step
