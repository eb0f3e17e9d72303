"""An eval item's checks, each scoring one turn's outcome from 0 to 1 with a reason.

Every check but `judge` is a pure function of the outcome (the final text, the structured output,
the tool calls in order, tokens and latency), so a run's scores can be recomputed from its turns.
`judge` asks a model (app/evals/judge.py); it is scored by the runner, not here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.governance.canonical import canonical_json
from app.governance.patterns import PatternError, pattern_found

JUDGE = "judge"
REFERENCE = "reference"
"""The implicit check of an item with a reference answer and no checks of its own: token F1."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a check sees of one eval turn."""

    status: str
    text: str
    output: Any = None
    tool_calls: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    """`{"name", "arguments"}` in the order the model asked for them."""
    tokens: int = 0
    latency_ms: int = 0


@dataclass(frozen=True, slots=True)
class Score:
    type: str
    score: float
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"type": self.type, "score": round(self.score, 4), "reason": self.reason}


def score(check: Mapping[str, Any], outcome: Outcome, reference: str | None = None) -> Score:
    """Score one check (never `judge`). Raises nothing: a broken check scores 0 with its reason."""
    kind = str(check["type"])
    return _SCORERS[kind](check, outcome, reference)


def _equals(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    ok = _normal(outcome.text) == _normal(str(check["value"]))
    return Score("equals", 1.0 if ok else 0.0, "the answer equals the value" if ok else "the answer differs")


def _contains(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    value, text = str(check["value"]), outcome.text
    if not check.get("case_sensitive", False):
        value, text = value.casefold(), text.casefold()
    ok = value in text
    return Score("contains", 1.0 if ok else 0.0, "the value is in the answer" if ok else "the value is missing")


def _regex(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    try:
        ok = pattern_found(str(check["pattern"]), outcome.text)
    except (PatternError, UnicodeEncodeError) as exc:
        return Score("regex", 0.0, f"the pattern cannot run: {exc}")
    return Score("regex", 1.0 if ok else 0.0, "the pattern matches" if ok else "the pattern does not match")


def _json_schema(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    from app.evals.schema_check import violations

    problems = violations(check["schema"], outcome.output, outcome.text)
    if not problems:
        return Score("json_schema", 1.0, "the output matches the schema")
    return Score("json_schema", 0.0, "; ".join(problems[:3]))


def _tool_calls(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    """The fraction of expected calls the turn made (names, and arguments where given); `order:
    "exact"` also asks for them in that order, with nothing else between."""
    expected = list(check["calls"])
    made = [dict(call) for call in outcome.tool_calls]
    if check.get("order", "exact") == "exact":
        hits = sum(1 for want, got in zip(expected, made, strict=False) if _same_call(want, got))
        extra = max(0, len(made) - len(expected))
        total = max(len(expected), 1) + extra
        value = hits / total if expected or made else 1.0
    else:
        pool = Counter(_call_key(got, with_args=True) for got in made)
        names = Counter(_call_key(got, with_args=False) for got in made)
        hits = 0
        for want in expected:
            key = _call_key(want, with_args="arguments" in want)
            bag = pool if "arguments" in want else names
            if bag[key] > 0:
                bag[key] -= 1
                hits += 1
        value = hits / len(expected) if expected else (1.0 if not made else 0.0)
    names_made = ", ".join(call.get("name", "?") for call in made) or "none"
    return Score("tool_calls", value, f"{hits} of {len(expected)} expected calls made (made: {names_made})")


def _max_tokens(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    limit = int(check["value"])
    ok = outcome.tokens <= limit
    return Score("max_tokens", 1.0 if ok else 0.0, f"{outcome.tokens} tokens (limit {limit})")


def _max_latency(check: Mapping[str, Any], outcome: Outcome, _: str | None) -> Score:
    limit = int(check["value"])
    ok = outcome.latency_ms <= limit
    return Score("max_latency_ms", 1.0 if ok else 0.0, f"{outcome.latency_ms} ms (limit {limit} ms)")


def _reference(check: Mapping[str, Any], outcome: Outcome, reference: str | None) -> Score:
    """Token F1 between the answer and the item's reference answer (SQuAD's measure)."""
    want = _tokens(reference or str(check.get("value", "")))
    got = _tokens(outcome.text)
    if not want or not got:
        same = want == got
        return Score(REFERENCE, 1.0 if same else 0.0, "both empty" if same else "one of the two is empty")
    common = sum((Counter(want) & Counter(got)).values())
    if common == 0:
        return Score(REFERENCE, 0.0, "no word in common with the reference")
    precision, recall = common / len(got), common / len(want)
    f1 = 2 * precision * recall / (precision + recall)
    return Score(REFERENCE, f1, f"token F1 {f1:.2f} against the reference")


_SCORERS: dict[str, Callable[[Mapping[str, Any], Outcome, str | None], Score]] = {
    "equals": _equals,
    "contains": _contains,
    "regex": _regex,
    "json_schema": _json_schema,
    "tool_calls": _tool_calls,
    "max_tokens": _max_tokens,
    "max_latency_ms": _max_latency,
    REFERENCE: _reference,
}
CHECK_TYPES = (*_SCORERS, JUDGE)


def _same_call(want: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
    if want.get("name") != got.get("name"):
        return False
    return "arguments" not in want or canonical_json(want["arguments"]) == canonical_json(got.get("arguments", {}))


def _call_key(call: Mapping[str, Any], *, with_args: bool) -> str:
    name = str(call.get("name"))
    return f"{name}:{canonical_json(call.get('arguments', {}))}" if with_args else name


_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _normal(text: str) -> str:
    return " ".join(text.split())
