"""Built-in detectors for the `output` and `tool_result` points: a name in, match spans out.

Each detector is a bounded regular expression (Python's `re`, every repetition counted, no nested
unbounded quantifier, so the work per start position is capped) plus, where a shape alone is too
loose, a check of the candidate: Luhn for card numbers, ISO 7064 mod 97 for IBANs, an entropy floor
for anonymous tokens. `WINDOWS` is the longest text each can match: the streaming guard holds back
that much of a reply's tail (app/governance/output_guard.py), capped by `OUTPUT_GUARD_HOLDBACK_CHARS`.

They find well-formed values, not every secret: docs/decisions.md ("Guardrails on outputs") lists
what each misses. Spans are `(start, end)` character offsets, non-overlapping, in text order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Literal

Span = tuple[int, int]
Detector = Callable[[str], list[Span]]
OutputDetector = Literal["email", "phone", "credit_card", "iban", "api_key", "jwt"]
ResultDetector = Literal["email", "phone", "credit_card", "iban", "api_key", "jwt", "injection"]

ENTROPY_MIN_LENGTH = 32
ENTROPY_MIN_BITS = 4.0
"""An anonymous token is an `api_key` from 32 characters on, with at least one letter and one digit
and a Shannon entropy of 4.0 bits per character or more: random base62/base64 keys have about 4.5
to 5, hex digests and UUIDs at most 4 (16 symbols) and identifiers made of words about 3.5 to 4."""

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}")
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}(?![\w])")
_CARD = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])")
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,200}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{36,251}"
    r"|github_pat_[A-Za-z0-9_]{22,251}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,200}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r")(?![A-Za-z0-9_-])"
)
_TOKEN = re.compile(rf"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{{{ENTROPY_MIN_LENGTH},256}}(?![A-Za-z0-9_+/=-])")
_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,1000}\.[A-Za-z0-9_-]{4,2000}\.[A-Za-z0-9_-]{0,1000}")
_INJECTION = re.compile(
    r"(?i)\b(?:"
    r"(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
    r"(?:previous|prior|above|earlier|preceding|original|system)\s+(?:instructions?|prompts?|messages?|rules?)"
    r"|you\s+are\s+now\s+(?:a|an|in|the)\b"
    r"|(?:new|updated|real)\s+(?:system\s+)?instructions?\s*:"
    r"|(?:reveal|print|show|repeat)\s+(?:your|the)\s+(?:system\s+prompt|instructions|hidden\s+prompt)"
    r"|do\s+not\s+(?:tell|inform)\s+the\s+user"
    r")"
    r"|<\|im_start\|>|<\|system\|>|\[/?INST\]|</?system>"
)


def _spans(pattern: re.Pattern[str], text: str, keep: Callable[[str], bool] | None = None) -> list[Span]:
    return [m.span() for m in pattern.finditer(text) if keep is None or keep(m.group())]


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def luhn_valid(number: str) -> bool:
    """The Luhn checksum of a string of digits (every second digit from the right doubled)."""
    total = 0
    for position, char in enumerate(reversed(number)):
        digit = int(char)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def iban_valid(value: str) -> bool:
    """ISO 13616: the country and check digits moved to the end, letters as 10..35, mod 97 is 1."""
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def entropy_bits(value: str) -> float:
    """Shannon entropy of the characters of `value`, in bits per character."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _card(value: str) -> bool:
    digits = _digits(value)
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def _phone(value: str) -> bool:
    digits = len(_digits(value))
    return 8 <= digits <= 15 if value.startswith("+") else 10 <= digits <= 15


def _random_token(value: str) -> bool:
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    return has_letter and has_digit and entropy_bits(value) >= ENTROPY_MIN_BITS


def email(text: str) -> list[Span]:
    return _spans(_EMAIL, text)


def phone(text: str) -> list[Span]:
    return _spans(_PHONE, text, _phone)


def credit_card(text: str) -> list[Span]:
    return _spans(_CARD, text, _card)


def iban(text: str) -> list[Span]:
    return _spans(_IBAN, text, iban_valid)


def api_key(text: str) -> list[Span]:
    return merged([*_spans(_KEY_SHAPES, text), *_spans(_TOKEN, text, _random_token)])


def jwt(text: str) -> list[Span]:
    return _spans(_JWT, text)


def injection(text: str) -> list[Span]:
    return _spans(_INJECTION, text)


def merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans joined, in text order."""
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


DETECTORS: dict[str, Detector] = {
    "email": email,
    "phone": phone,
    "credit_card": credit_card,
    "iban": iban,
    "api_key": api_key,
    "jwt": jwt,
    "injection": injection,
}
WINDOWS: dict[str, int] = {
    "email": 320,
    "phone": 40,
    "credit_card": 37,
    "iban": 42,
    "api_key": 256,
    "jwt": 4002,
    "injection": 160,
}
"""The longest match of each detector, in characters."""
