"""Pre-LLM regexes are user-written: RE2 judges them in linear time, and what it cannot run is a deny."""

from __future__ import annotations

from app.governance.gate import judge_input
from app.governance.policy import PolicyRule, PolicySet, parse_rules

# Exponential for a backtracking engine on "aaa…a" (Python's `re` and `regex` never finish it).
BACKTRACKER = parse_rules([{"id": "evil", "point": "pre_llm", "input_regex": "((a+)+b)+c", "verdict": "deny"}])


async def test_a_pattern_that_backtracks_exponentially_elsewhere_is_judged_exactly() -> None:
    miss = await judge_input(PolicySet(agent_rules=BACKTRACKER), "a" * 100_000)
    hit = await judge_input(PolicySet(agent_rules=BACKTRACKER), "a" * 100_000 + "bc")

    assert (miss.verdict, miss.rule_id) == ("allow", None)
    assert (hit.verdict, hit.rule_id) == ("deny", "evil")


async def test_a_matching_regex_decides_as_usual() -> None:
    rules = parse_rules([{"id": "pw", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"}])
    decision = await judge_input(PolicySet(agent_rules=rules), "my PASSWORD is x")
    assert decision.verdict == "deny"
    assert decision.rule_id == "pw"


async def test_a_stored_pattern_re2_refuses_is_an_engine_error_deny() -> None:
    # A rule stored before RE2 (a lookahead Python accepted): never matched by guesswork, always a deny.
    legacy = PolicyRule.model_construct(id="old", point="pre_llm", verdict="allow", input_regex="(?=x)")
    decision = await judge_input(PolicySet(agent_rules=(legacy,)), "hello")

    assert (decision.verdict, decision.rule_id) == ("deny", "engine_error")
    assert decision.reason == "policy engine error: app.governance.patterns.PatternError"


async def test_input_re2_cannot_encode_is_an_engine_error_deny() -> None:
    rules = parse_rules([{"id": "pw", "point": "pre_llm", "input_regex": "password", "verdict": "allow"}])
    decision = await judge_input(PolicySet(agent_rules=rules), "lone \ud800 surrogate")

    assert (decision.verdict, decision.rule_id) == ("deny", "engine_error")
