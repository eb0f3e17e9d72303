"""User-written regular expressions, run by RE2: linear time and a fixed memory budget per pattern.

A policy's ``input_regex`` comes from any user of a tenant (agent policies) or its admins (tenant
policies), so it must not be able to exhaust the process. Python's own engines backtrack (time
exponential in the input) and expand counted repetitions at compile time (``(?:(?:a{1000}){1000}){1000}``
asks for 10^9 nodes). RE2 (Google's engine, through its official ``google-re2`` binding) matches in
time linear in the input, refuses a repetition count above 1000 and any pattern whose compiled
program does not fit ``PATTERN_MEMORY_BYTES``; its lazy DFA stays within the same budget while it
searches. The binding keeps the last 128 compiled patterns, so the patterns of the process hold at
most 128 x ``PATTERN_MEMORY_BYTES``.

RE2 takes most of Python's syntax. What it refuses is rejected at the API with ``invalid_pattern``;
``docs/governance.md`` lists the differences (and the few constructs that mean something else).
"""

from __future__ import annotations

import re
from typing import Any, Protocol, cast

import re2

PATTERN_MEMORY_BYTES = 1 << 20
"""Budget of one compiled pattern: its program and its search cache (RE2 ``max_mem``)."""


MAX_REPEAT = 1000
"""RE2's own ceiling on ``{n}``; it reads a count of ten digits or more as literal text, so longer
counts are refused here instead."""
_COUNTS = re.compile(r"\{(\d*)(?:,(\d*))?\}")


class PatternError(ValueError):
    """A pattern RE2 cannot take; the message says why without echoing any input text."""


class _Compiled(Protocol):
    def search(self, text: str) -> Any: ...

    def finditer(self, text: str) -> Any: ...


def _options() -> Any:
    options = re2.Options()
    options.max_mem = PATTERN_MEMORY_BYTES
    options.log_errors = False
    return options


_OPTIONS = _options()


def check_pattern(pattern: str) -> None:
    """Raise ``PatternError`` unless RE2 compiles the pattern within the budget."""
    _compile(pattern)


def pattern_found(pattern: str, text: str) -> bool:
    """True when the pattern matches anywhere in the text (``re.search`` semantics).

    Raises ``PatternError`` for a pattern RE2 refuses and ``UnicodeEncodeError`` for text with a
    lone surrogate; the policy engine turns either into a deny.
    """
    return _compile(pattern).search(text) is not None


def pattern_spans(pattern: str, text: str) -> list[tuple[int, int]]:
    """The `(start, end)` character offsets of the pattern's non-overlapping matches, empty ones left out."""
    return [span for match in _compile(pattern).finditer(text) if (span := match.span())[0] != span[1]]


def _compile(pattern: str) -> _Compiled:
    _refuse_ambiguous(pattern)
    try:
        return cast(_Compiled, re2.compile(pattern, _OPTIONS))
    except re2.error as exc:
        raise PatternError(_message(exc)) from exc
    except UnicodeEncodeError as exc:
        raise PatternError("the pattern contains a lone surrogate") from exc


def _refuse_ambiguous(pattern: str) -> None:
    r"""Refuse what RE2 would accept with another meaning than Python's: ``{,n}`` and counts of ten
    digits or more (literal text in RE2, repetitions in Python) and ``\C`` (one byte, which can
    split a character)."""
    escaped = False
    class_start: int | None = None
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
            if char == "C":
                raise PatternError(r"\C (any single byte) is not supported")
        elif char == "\\":
            escaped = True
        elif class_start is not None:
            if char == "]" and not _first_in_class(pattern, class_start, index):
                class_start = None
        elif char == "[":
            class_start = index
        elif char == "{":
            _check_counts(_COUNTS.match(pattern, index))


def _check_counts(counts: re.Match[str] | None) -> None:
    if counts is None:
        return
    low, high = counts.group(1), counts.group(2)
    if not low:
        raise PatternError("a repetition needs its lower bound: write {0,n}, not {,n}")
    if len(low) > 4 or len(high or "") > 4:
        raise PatternError(f"a repetition count is at most {MAX_REPEAT}")


def _first_in_class(pattern: str, start: int, index: int) -> bool:
    """A ``]`` right after ``[`` or ``[^`` is a member of the class, not its end."""
    return index == start + 1 or (index == start + 2 and pattern[start + 1] == "^")


def _message(exc: Exception) -> str:
    """RE2's reason without the fragment it quotes (errors never echo what the client sent)."""
    detail = exc.args[0] if exc.args else b""
    text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
    if "pattern too large" in text:
        return f"it needs more than the {PATTERN_MEMORY_BYTES >> 20} MiB a pattern may use"
    return text.partition(":")[0] or "RE2 cannot compile it"
