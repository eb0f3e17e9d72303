"""A recorded input judged again: by a draft policy set (simulation) or rule by rule (explain).

Pure, like app/governance/policy.py, and built from the gate's own functions (`decide_pre_llm`,
`decide_tool`, `judge_text`, the matchers), so a replay cannot drift from what a turn would do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.governance.policy import (
    BLACKLIST_RULE_ID,
    ENGINE_ERROR_RULE_ID,
    Decision,
    Match,
    Point,
    PolicyRule,
    PolicySet,
    decide_pre_llm,
    decide_tool,
    exception_name,
    match_call,
    match_glob,
    match_input,
)
from app.governance.screening import (
    REGEX_DETECTOR,
    TextRule,
    count_why,
    hit_counts,
    judge_text,
    screen_of,
    takes_tool,
)

STRENGTH = ("allow", "redact", "requires_approval", "deny")
"""Verdicts from the weakest to the strongest: a text several rules acted on takes the strongest."""

Source = Literal["tenant", "agent", "blacklist", "builtin"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """The input one decision judged: a turn's input, a call, a reply or a tool's result."""

    point: Point
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    verdict: str
    rule_ids: tuple[str, ...] = ()


def outcome_of(verdicts: Iterable[tuple[str, str | None]]) -> Outcome:
    """The verdict of receipts `(verdict, rule_id)` on one input; a deny names only the denying rules."""
    pairs = list(verdicts)
    if not pairs:
        return Outcome("allow")
    verdict = max((v for v, _ in pairs), key=lambda v: STRENGTH.index(v) if v in STRENGTH else 0)
    chosen = [rule for v, rule in pairs if rule is not None and (verdict != "deny" or v == "deny")]
    return Outcome(verdict, tuple(dict.fromkeys(chosen)))


def _single(decision: Decision) -> Outcome:
    return Outcome(decision.verdict, (decision.rule_id,) if decision.rule_id else ())


def rejudge(policy: PolicySet, recorded: Recorded) -> Outcome:
    """What `policy` decides on `recorded`, exactly as the gate would (engine errors deny)."""
    if recorded.point == "pre_llm":
        return _single(decide_pre_llm(policy, recorded.text))
    if recorded.point == "tool":
        return _single(decide_tool(policy, recorded.tool_name or "", recorded.arguments or {}))
    screen = screen_of(policy, recorded.point, tool_name=recorded.tool_name)
    if screen is None:
        return Outcome("allow")
    judged = judge_text(screen, recorded.text)
    if judged.denied is not None:
        return _single(judged.denied)
    return outcome_of((d.verdict, d.rule_id) for d in judged.decisions)


@dataclass(frozen=True, slots=True)
class RuleTrace:
    rule_id: str
    source: Source
    point: str
    evaluated: bool
    matched: bool
    why: str


@dataclass
class Explanation:
    verdict: str
    decided_by: str | None
    rules: list[RuleTrace] = field(default_factory=list)


def _sourced(policy: PolicySet) -> list[tuple[Source, PolicyRule]]:
    return [*(("tenant", r) for r in policy.tenant_rules), *(("agent", r) for r in policy.agent_rules)]


def explain(policy: PolicySet, recorded: Recorded) -> Explanation:
    """Every rule of the set in the gate's order: whether it was looked at, whether it matched and why."""
    outcome = rejudge(policy, recorded)
    decided_by = outcome.rule_ids[0] if outcome.rule_ids else None
    found = Explanation(outcome.verdict, decided_by)
    if recorded.point == "tool":
        found.rules += _blacklist_traces(policy, recorded.tool_name or "")
    try:
        found.rules += _rule_traces(policy, recorded, decided_by)
    except Exception as exc:
        found.rules.append(RuleTrace(ENGINE_ERROR_RULE_ID, "builtin", recorded.point, True, True, exception_name(exc)))
    return found


def _blacklist_traces(policy: PolicySet, tool_name: str) -> list[RuleTrace]:
    traces: list[RuleTrace] = []
    for pattern in policy.tool_blacklist:
        match = match_glob(pattern, tool_name)
        traces.append(RuleTrace(BLACKLIST_RULE_ID, "blacklist", "tool", True, match.matched, match.why))
        if match.matched:
            break
    return traces


def _rule_traces(policy: PolicySet, recorded: Recorded, decided_by: str | None) -> list[RuleTrace]:
    first_match = recorded.point in ("pre_llm", "tool")
    counts: Counter[TextRule] | None = None
    if recorded.point in ("output", "tool_result"):
        screen = screen_of(policy, recorded.point, tool_name=recorded.tool_name)
        counts = hit_counts(screen, recorded.text) if screen is not None else None
    traces: list[RuleTrace] = []
    decided = decided_by == BLACKLIST_RULE_ID
    for source, rule in _sourced(policy):
        if rule.point != recorded.point:
            traces.append(RuleTrace(rule.id, source, rule.point, False, False, "point differs"))
        elif first_match and decided:
            traces.append(RuleTrace(rule.id, source, rule.point, False, False, "not reached: an earlier rule decided"))
        else:
            match = _match(rule, recorded, counts)
            traces.append(RuleTrace(rule.id, source, rule.point, True, match.matched, match.why))
            decided = decided or match.matched
    return traces


def _match(rule: PolicyRule, recorded: Recorded, counts: Counter[TextRule] | None) -> Match:
    if recorded.point == "pre_llm":
        return match_input(rule, recorded.text)
    if recorded.point == "tool":
        return match_call(rule, recorded.tool_name or "", recorded.arguments or {})
    takes = takes_tool(rule, recorded.tool_name)
    if not takes.matched or counts is None:
        return takes
    text_rule = TextRule(rule, rule.detect or REGEX_DETECTOR)
    return Match(counts[text_rule] > 0, count_why(text_rule, counts[text_rule]))
