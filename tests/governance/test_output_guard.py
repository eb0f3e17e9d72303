"""The streaming guard: a secret split anywhere never leaves it, and the rest leaves at once."""

from __future__ import annotations

from typing import Any

import pytest

from app.governance.output_guard import OutputGuard
from app.governance.policy import PolicySet, parse_rules
from app.governance.screening import screen_of

CARD = "4111 1111 1111 1111"
KEY = "sk-live-Zk3q9XvB2mT7pLw4RcY8nH1s"
REDACT_CARDS = {"id": "cards", "point": "output", "detect": "credit_card", "verdict": "redact"}
REDACT_KEYS = {"id": "keys", "point": "output", "detect": "api_key", "verdict": "redact"}
DENY_CODENAME = {"id": "codename", "point": "output", "output_regex": "(?i)project\\s+falcon", "verdict": "deny"}


def guard(*rules: dict[str, Any], holdback: int = 256) -> OutputGuard:
    screen = screen_of(PolicySet(agent_rules=parse_rules(list(rules))), "output")
    assert screen is not None
    return OutputGuard(screen, holdback=holdback)


def stream(g: OutputGuard, deltas: list[str]) -> list[str]:
    return [*(g.feed(d) for d in deltas), g.finish()]


def splits(text: str) -> list[list[str]]:
    """The text cut once at every position, and cut into single characters."""
    return [[text[:i], text[i:]] for i in range(len(text) + 1)] + [list(text)]


@pytest.mark.parametrize("secret", [CARD, KEY])
def test_a_secret_split_at_any_position_never_leaves_the_guard(secret: str) -> None:
    text = f"your value is {secret} and nothing else"
    for deltas in splits(text):
        g = guard(REDACT_CARDS, REDACT_KEYS)
        frames = stream(g, deltas)
        detector = "credit_card" if secret == CARD else "api_key"
        assert "".join(frames) == g.text == text.replace(secret, f"[REDACTED:{detector}]")
        for frame in frames:
            assert not any(secret[i : i + 4] in frame for i in range(len(secret) - 3))


def test_receipts_count_matches_and_carry_no_text() -> None:
    g = guard(REDACT_CARDS, {**REDACT_KEYS, "replacement": "<key>"})
    stream(g, [f"a {CARD} b {KEY} c {CARD}"])
    assert g.text == "a [REDACTED:credit_card] b <key> c [REDACTED:credit_card]"
    receipts = [(d.point, d.verdict, d.rule_id, d.detector, d.match_count) for d in g.decisions()]
    assert receipts == [("output", "redact", "cards", "credit_card", 2), ("output", "redact", "keys", "api_key", 1)]
    assert all(CARD not in repr(d) and KEY not in repr(d) for d in g.decisions())


def test_a_deny_stops_the_reply_and_keeps_what_was_released() -> None:
    g = guard(DENY_CODENAME, holdback=16)
    before = "x" * 40
    frames = [g.feed(before), g.feed(" Project "), g.feed("Falcon launches"), g.feed(" more"), g.finish()]
    assert "".join(frames) == g.text
    assert g.text == before[: len(g.text)]
    assert frames[-2:] == ["", ""]
    assert g.blocked is not None
    assert (g.blocked.verdict, g.blocked.rule_id, g.blocked.detector, g.blocked.match_count) == (
        "deny",
        "codename",
        "regex",
        1,
    )


def test_the_held_tail_never_exceeds_the_holdback() -> None:
    long_run = {"id": "r", "point": "output", "output_regex": "z{1,400}", "verdict": "redact"}
    g = guard(REDACT_CARDS, long_run, holdback=64)
    sent = 0
    for char in "lorem ipsum " * 40 + "z" * 300 + " 4111 1111 " * 20:
        sent += len(g.feed(char))
        assert g.held <= 64
    assert sent > 0


def test_text_leaves_as_soon_as_it_is_past_the_window() -> None:
    """Time to first token grows by at most the holdback: with cards only, 37 characters."""
    g = guard(REDACT_CARDS, holdback=256)
    assert g.holdback == 37
    released = ""
    text = "plain words with no card number in them at all, " * 5
    for index, char in enumerate(text, start=1):
        released += g.feed(char)
        assert len(released) >= index - g.holdback
    assert released + g.finish() == text


def test_allow_rule_ahead_of_a_redact_keeps_its_match() -> None:
    allow_test_card = {"id": "test-card", "point": "output", "output_regex": "4111 1111 1111 1111", "verdict": "allow"}
    g = guard(allow_test_card, REDACT_CARDS)
    stream(g, [f"{CARD} and 5555 5555 5555 4444"])
    assert g.text == f"{CARD} and [REDACTED:credit_card]"
    assert [(d.rule_id, d.verdict, d.match_count) for d in g.decisions()] == [
        ("test-card", "allow", 1),
        ("cards", "redact", 1),
    ]


def test_text_a_pattern_cannot_read_denies() -> None:
    g = guard({"id": "r", "point": "output", "output_regex": "x", "verdict": "redact"})
    assert g.feed("lone \ud800 surrogate") == ""
    assert g.finish() == ""
    assert g.blocked is not None
    assert g.blocked.rule_id == "engine_error"
