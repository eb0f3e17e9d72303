"""Each check's score of an outcome (pure functions: no database, no model)."""

from __future__ import annotations

from typing import Any

import pytest

from app.evals.checks import Outcome, score

CALLS = ({"name": "search", "arguments": {"q": "a"}}, {"name": "echo", "arguments": {"text": "b"}})


def _outcome(**overrides: Any) -> Outcome:
    return Outcome(**{"status": "completed", "text": "The answer is 42.", "tool_calls": CALLS, "tokens": 120,
                      "latency_ms": 800, **overrides})  # fmt: skip


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        ({"type": "equals", "value": "the answer is 42."}, 0.0),
        ({"type": "equals", "value": "  The answer   is 42. "}, 1.0),
        ({"type": "contains", "value": "ANSWER"}, 1.0),
        ({"type": "contains", "value": "ANSWER", "case_sensitive": True}, 0.0),
        ({"type": "regex", "pattern": r"\b4\d\b"}, 1.0),
        ({"type": "regex", "pattern": r"^\d+$"}, 0.0),
        ({"type": "max_tokens", "value": 120}, 1.0),
        ({"type": "max_tokens", "value": 119}, 0.0),
        ({"type": "max_latency_ms", "value": 799}, 0.0),
        ({"type": "tool_calls", "calls": [{"name": "search"}, {"name": "echo"}]}, 1.0),
        ({"type": "tool_calls", "calls": [{"name": "echo"}, {"name": "search"}]}, 0.0),
        ({"type": "tool_calls", "calls": [{"name": "echo"}, {"name": "search"}], "order": "set"}, 1.0),
        ({"type": "tool_calls", "calls": [{"name": "search", "arguments": {"q": "z"}}], "order": "set"}, 0.0),
        ({"type": "tool_calls", "calls": [{"name": "search", "arguments": {"q": "a"}}]}, 0.5),
    ],
)
def test_a_check_scores_the_outcome(check: dict[str, Any], expected: float) -> None:
    assert score(check, _outcome()).score == pytest.approx(expected)


def test_json_schema_reads_the_structured_output_or_the_answer_as_json() -> None:
    schema = {"type": "object", "required": ["total"], "properties": {"total": {"type": "integer"}}}
    check = {"type": "json_schema", "schema": schema}
    assert score(check, _outcome(output={"total": 3})).score == 1.0
    assert score(check, _outcome(text='{"total": 3}')).score == 1.0
    wrong = score(check, _outcome(output={"total": "3"}))
    assert wrong.score == 0.0
    assert "total" in wrong.reason
    assert score(check, _outcome(text="not json")).reason == "the answer is not JSON"


def test_json_schema_patterns_run_on_re2_so_a_catastrophic_one_stays_linear() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    check = {"type": "json_schema", "schema": schema}
    assert score(check, _outcome(output={"s": "a" * 50_000 + "b"})).score == 0.0
    assert score(check, _outcome(output={"s": "a" * 50_000})).score == 1.0


def test_the_reference_check_is_token_f1() -> None:
    assert score({"type": "reference"}, _outcome(text="the answer is 42"), "The answer is 42.").score == 1.0
    half = score({"type": "reference"}, _outcome(text="answer 42 maybe wrong"), "the answer is 42")
    assert 0.4 < half.score < 0.6
    assert score({"type": "reference"}, _outcome(text="nothing alike"), "the answer is 42").score == 0.0
