"""Routing between nodes: pure functions of the state."""

from __future__ import annotations

from typing import Literal

from app.governance.budget import spent_reason
from app.graph.state import TurnState, budget_of, spent_of

End = Literal["__end__"]


def route_entry(state: TurnState) -> Literal["assemble_context", "execute_tools", "parse_response"]:
    """A resumed turn re-enters at the batch it stopped in; a continued one whose final answer is
    stored only closes the turn; any other starts at the context (a lost model call is made again)."""
    if state.get("answered"):
        return "parse_response"
    return "execute_tools" if state.get("resume") else "assemble_context"


def after_validate(state: TurnState) -> Literal["call_llm"] | End:
    return "__end__" if state.get("status") else "call_llm"


def should_continue(state: TurnState) -> Literal["execute_tools", "ingest_result", "loop_limit_handler"] | End:
    if state.get("status"):
        return "__end__"
    if not state.get("pending"):
        return "ingest_result"
    if spent_reason(budget_of(state), spent_of(state)) is not None:
        return "loop_limit_handler"
    return "execute_tools"


def after_execute_tools(state: TurnState) -> Literal["ingest_result"] | End:
    return "__end__" if state.get("status") == "interrupted" else "ingest_result"


def after_ingest(state: TurnState) -> Literal["assemble_context", "loop_limit_handler"] | End:
    if state.get("status") == "completed":
        return "__end__"
    if state.get("loop_count", 0) >= state["max_loops"]:
        return "loop_limit_handler"
    return "assemble_context"
