"""Pre-LLM regexes are user-written: they run off the event loop, and a runaway one is a deny."""

from __future__ import annotations

import asyncio

from app.governance.gate import judge_input
from app.governance.policy import PolicySet, parse_rules

RUNAWAY = parse_rules([{"id": "evil", "point": "pre_llm", "input_regex": "((a+)+b)+c", "verdict": "allow"}])


async def test_a_runaway_regex_is_an_engine_error_deny_and_the_loop_keeps_running() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    decision = await judge_input(PolicySet(agent_rules=RUNAWAY), "a" * 3000)
    task.cancel()
    assert decision.verdict == "deny"
    assert decision.rule_id == "engine_error"
    assert ticks > 5, "the event loop was blocked while the regex ran"


async def test_a_matching_regex_decides_as_usual() -> None:
    rules = parse_rules([{"id": "pw", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"}])
    decision = await judge_input(PolicySet(agent_rules=rules), "my PASSWORD is x")
    assert decision.verdict == "deny"
    assert decision.rule_id == "pw"
