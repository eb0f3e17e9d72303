"""Which regular-expression syntax a policy may use (RE2's), and what is refused instead of being
read with a meaning other than Python's."""

from __future__ import annotations

import re

import pytest

from app.governance.patterns import PatternError, check_pattern, pattern_found


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("(?i)password", "my PassWord", True),
        (r"\bssn\b", "lessness", False),
        ("(?m)^secret$", "one\nsecret\ntwo", True),
        ("(?s)a.b", "a\nb", True),
        (r"(?P<word>pass)word", "password", True),
        (r"\p{Greek}+", "αβγ", True),
        ("[[:digit:]]{3}", "call 911", True),
        (r"a{1,}", "caat", True),
        (r"[{,]", "a,b", True),
        (r"x{0,3}y", "xxy", True),
        (r"\x{263A}", "smile ☺", True),
        (r"\z", "", True),
        ("((a+)+b)+c", "a" * 50_000, False),
    ],
)
def test_re2_syntax_is_accepted_and_searches_like_re_search(pattern: str, text: str, found: bool) -> None:
    check_pattern(pattern)
    assert pattern_found(pattern, text) is found


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?:(?:a{1000}){1000}){1000}", "invalid repetition size"),
        ("a{1001}", "invalid repetition size"),
        ("a{4294967296}", "at most 1000"),
        ("a{,3}", "write {0,n}"),
        (r"\p{L}{1000}", "1 MiB"),
        (r"(\w)\1", "invalid escape sequence"),
        ("(?P<x>a)(?P=x)", "invalid perl operator"),
        ("foo(?=bar)", "invalid perl operator"),
        ("(?<!x)y", "invalid perl operator"),
        ("a++", "bad repetition operator"),
        (r"end\Z", "invalid escape sequence"),
        (r"\u00e9", "invalid escape sequence"),
        ("(?x) a b", "invalid perl operator"),
        ("(?#note)a", "invalid perl operator"),
        (r"\C", "any single byte"),
        ("\ud800", "lone surrogate"),
        ("(", "missing )"),
    ],
)
def test_what_re2_cannot_take_or_would_read_differently_is_refused(pattern: str, why: str) -> None:
    with pytest.raises(PatternError, match=re.escape(why)):
        check_pattern(pattern)


def test_refusals_never_quote_the_pattern() -> None:
    with pytest.raises(PatternError) as caught:
        check_pattern(r"hunter2\1")
    assert "hunter2" not in str(caught.value)
    assert r"\1" not in str(caught.value)
