"""The rules of a text point (`output`, `tool_result`) applied to text: where they match, what that becomes.

Pure, like app/governance/policy.py. A `Screen` is the rules in force for one reply or one tool
result, in precedence order (tenant, then agent); where two rules match overlapping text the first
rule wins, so an `allow` rule ahead of a `redact` one keeps what it matches. Receipts say which rule
acted, what matched it (a detector's name, or `regex`) and how often; never the matched text.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from app.governance.detectors import DETECTORS, WINDOWS, Span
from app.governance.patterns import pattern_spans
from app.governance.policy import (
    ENGINE_ERROR_RULE_ID,
    Decision,
    Match,
    PolicyRule,
    PolicySet,
    TextPoint,
    exception_name,
    match_glob,
    rules_at,
)

REGEX_DETECTOR = "regex"
_TEXT_FIELD = {"output": "output_regex", "tool_result": "result_regex"}
REFUSED_RESULT = "withheld by policy: {reason}"
"""What the model sees instead of a tool result a `tool_result` rule denies."""


@dataclass(frozen=True, slots=True)
class TextRule:
    rule: PolicyRule
    detector: str
    """The built-in detector's name, or `regex` for the rule's own pattern."""

    @property
    def window(self) -> int | None:
        """The longest text the rule can match; None when unknown (a user pattern)."""
        return WINDOWS.get(self.detector)

    @property
    def replacement(self) -> str:
        return self.rule.replacement if self.rule.replacement is not None else f"[REDACTED:{self.detector}]"

    def find(self, text: str) -> list[Span]:
        pattern = self.rule.text_pattern
        if pattern is not None:
            return pattern_spans(pattern, text)
        return DETECTORS[self.detector](text)


@dataclass(frozen=True, slots=True)
class Hit:
    rule: TextRule
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Screen:
    point: TextPoint
    rules: tuple[TextRule, ...]
    policy_hash: str

    @property
    def window(self) -> int | None:
        """The longest match of any rule (None when a user pattern's is unknown)."""
        windows = [rule.window for rule in self.rules]
        return None if None in windows else max(w for w in windows if w is not None)

    def hits(self, text: str) -> list[Hit]:
        """Non-overlapping matches in text order; raises what a pattern raises (callers fail closed)."""
        taken: list[Hit] = []
        starts: list[int] = []
        for rule in self.rules:
            for start, end in rule.find(text):
                at = bisect.bisect_left(starts, start)
                if (at > 0 and taken[at - 1].end > start) or (at < len(taken) and taken[at].start < end):
                    continue
                taken.insert(at, Hit(rule, start, end))
                starts.insert(at, start)
        return taken

    def decisions(self, counts: Counter[TextRule]) -> list[Decision]:
        """One receipt per rule that matched, in precedence order, with how often it did."""
        return [self.decision(rule, counts[rule]) for rule in self.rules if counts[rule]]

    def decision(self, rule: TextRule, count: int) -> Decision:
        rule_id, reason = rule.rule.id, rule.rule.reason
        return Decision(
            self.point, rule.rule.verdict, rule_id, reason, self.policy_hash, detector=rule.detector, match_count=count
        )

    def engine_error(self, exc: Exception) -> Decision:
        reason = f"policy engine error: {exception_name(exc)}"
        return Decision(self.point, "deny", ENGINE_ERROR_RULE_ID, reason, self.policy_hash)


def screen_of(policy: PolicySet, point: TextPoint, *, tool_name: str | None = None) -> Screen | None:
    """The set's rules of `point` (those whose `tool` glob takes `tool_name`), or None when there are none."""
    rules = tuple(
        TextRule(rule, rule.detect or REGEX_DETECTOR)
        for rule in rules_at(policy, point)
        if takes_tool(rule, tool_name).matched
    )
    return Screen(point, rules, policy.policy_hash) if rules else None


def takes_tool(rule: PolicyRule, tool_name: str | None) -> Match:
    """Whether a text rule applies to the result of `tool_name` (a rule without `tool` takes every text)."""
    if rule.tool is None:
        return Match(True, "the rule takes every tool")
    if tool_name is None:
        return Match(False, "the text is not a tool's result")
    return match_glob(rule.tool, tool_name)


def hit_counts(screen: Screen, text: str) -> Counter[TextRule]:
    """How often each rule acted on `text` (overlaps go to the earlier rule, as when the text is judged)."""
    return Counter(hit.rule for hit in screen.hits(text))


def count_why(rule: TextRule, count: int) -> str:
    what = f"detector {rule.detector}" if rule.rule.detect else _TEXT_FIELD[rule.rule.point]
    if not count:
        return f"{what} did not match"
    return f"{what} matched {count} time{'s' if count != 1 else ''}"


def redacted(text: str, hits: Iterable[Hit], *, offset: int = 0) -> str:
    """`text` with every `redact` hit replaced; hits are in text order, their offsets shifted by `offset`."""
    parts: list[str] = []
    at = 0
    for hit in hits:
        if hit.rule.rule.verdict != "redact":
            continue
        parts += [text[at : hit.start - offset], hit.rule.replacement]
        at = hit.end - offset
    parts.append(text[at:])
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Judged:
    """A whole text judged at once (a tool result): what the reader sees, and the receipts."""

    text: str
    decisions: list[Decision]
    denied: Decision | None = None
    gated: Decision | None = None
    """A `requires_approval` rule matched: `text` (redacted by the other rules) waits for a human."""


def judge_text(screen: Screen, text: str) -> Judged:
    """Deny if a `deny` rule matches (its receipt only, the text withheld); otherwise the redacted text,
    gated when a `requires_approval` rule matches."""
    try:
        hits = screen.hits(text)
    except Exception as exc:
        error = screen.engine_error(exc)
        return Judged(REFUSED_RESULT.format(reason=error.reason), [error], error)
    decisions = screen.decisions(Counter(hit.rule for hit in hits))
    denied = next((d for d in decisions if d.verdict == "deny"), None)
    if denied is not None:
        reason = denied.reason or f"rule {denied.rule_id}"
        return Judged(REFUSED_RESULT.format(reason=reason), [denied], denied)
    gated = next((d for d in decisions if d.verdict == "requires_approval"), None)
    return Judged(redacted(text, hits), decisions, gated=gated)
