"""Routing between the loop's nodes: every branch of every edge, as pure functions of the state."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph import edges
from app.graph.state import TurnState
from app.providers.base import ToolCall

CALL = ToolCall(id="call_0_0", name="echo", arguments={"text": "x"})


def state(**values: Any) -> TurnState:
    base: dict[str, Any] = {"input": "hi", "max_loops": 3, "max_output_tokens": 100}
    return TurnState(**{**base, **values})  # type: ignore[typeddict-item]


def test_route_entry_starts_a_new_turn_at_the_context() -> None:
    assert edges.route_entry(state()) == "assemble_context"
    assert edges.route_entry(state(resume=False)) == "assemble_context"


def test_route_entry_resumes_a_turn_at_its_tool_batch() -> None:
    assert edges.route_entry(state(resume=True)) == "execute_tools"


def test_after_validate_calls_the_model_when_the_prompt_passed() -> None:
    assert edges.after_validate(state()) == "call_llm"
    assert edges.after_validate(state(status=None)) == "call_llm"


def test_after_validate_ends_a_turn_the_validation_failed() -> None:
    assert edges.after_validate(state(status="failed")) == "__end__"


def test_should_continue_ends_on_an_error_even_with_calls_pending() -> None:
    assert edges.should_continue(state(status="failed", pending=[CALL])) == "__end__"


@pytest.mark.parametrize("pending", [None, []])
def test_should_continue_ingests_a_final_answer(pending: list[ToolCall] | None) -> None:
    values = {} if pending is None else {"pending": pending}
    assert edges.should_continue(state(**values)) == "ingest_result"


def test_should_continue_ingests_a_final_answer_even_over_budget() -> None:
    assert edges.should_continue(state(output_tokens=500, pending=[])) == "ingest_result"


def test_should_continue_executes_requested_tools_within_budget() -> None:
    assert edges.should_continue(state(pending=[CALL], output_tokens=99)) == "execute_tools"
    assert edges.should_continue(state(pending=[CALL])) == "execute_tools"


@pytest.mark.parametrize("spent", [100, 101])
def test_should_continue_stops_tools_once_the_output_budget_is_spent(spent: int) -> None:
    assert edges.should_continue(state(pending=[CALL], output_tokens=spent)) == "loop_limit_handler"


def test_after_execute_tools_ingests_the_results() -> None:
    assert edges.after_execute_tools(state()) == "ingest_result"
    assert edges.after_execute_tools(state(status=None)) == "ingest_result"


def test_after_execute_tools_ends_a_batch_waiting_for_a_human() -> None:
    assert edges.after_execute_tools(state(status="interrupted")) == "__end__"


def test_after_ingest_ends_a_completed_turn_even_at_the_loop_limit() -> None:
    assert edges.after_ingest(state(status="completed", loop_count=3)) == "__end__"


@pytest.mark.parametrize("loops", [3, 4])
def test_after_ingest_hands_over_to_the_loop_limit_at_max_loops(loops: int) -> None:
    assert edges.after_ingest(state(loop_count=loops)) == "loop_limit_handler"


@pytest.mark.parametrize("loops", [None, 0, 2])
def test_after_ingest_loops_back_to_the_context_below_max_loops(loops: int | None) -> None:
    values = {} if loops is None else {"loop_count": loops}
    assert edges.after_ingest(state(**values)) == "assemble_context"
