"""Context windows of known models, and the token estimate used where a provider has not counted.

The estimate is deliberately on the high side, because compaction and budgets act on it before a
provider reports real counts: one token per four ASCII characters (the usual ratio for English and
code on BPE tokenizers) plus one per non-ASCII character (CJK and other scripts run near one token a
character), plus a small framing overhead per message. The scripted provider counts one token a
word, so its estimate is exact.
"""

from __future__ import annotations

import math

DEFAULT_CONTEXT_WINDOW = 32_768
"""For a model not in the table: small enough to be safe on self-hosted models; agents override it
with `model.context_window`."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Role and framing tokens a provider adds around each message."""

KNOWN_WINDOWS: dict[str, tuple[tuple[str, int], ...]] = {
    "anthropic": (
        ("claude-", 200_000),
    ),
    "openai": (
        ("gpt-3.5-turbo", 16_385),
        ("gpt-4", 8_192),
        ("gpt-4-32k", 32_768),
        ("chatgpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4o", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("o1", 200_000),
        ("o1-mini", 128_000),
        ("o1-preview", 128_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
    ),
    "gemini": (
        ("gemini-1.5-flash", 1_048_576),
        ("gemini-1.5-pro", 2_097_152),
        ("gemini-2.0-flash", 1_048_576),
        ("gemini-2.5-flash", 1_048_576),
        ("gemini-2.5-pro", 1_048_576),
        ("gemini-3", 1_048_576),
    ),
}  # fmt: skip
"""Model-name prefixes per provider; the longest matching prefix wins."""


def context_window(provider: str, model: str, override: int | None = None) -> int:
    """The window in tokens: the agent's `model.context_window`, else the table, else the default."""
    if override is not None:
        return override
    name = model.lower()
    matches = [(len(prefix), window) for prefix, window in KNOWN_WINDOWS.get(provider, ()) if name.startswith(prefix)]
    return max(matches)[1] if matches else DEFAULT_CONTEXT_WINDOW


def estimate_tokens(text: str, provider: str) -> int:
    """Tokens `text` is likely to cost on `provider` (see the module docstring)."""
    if provider == "scripted":
        return len(text.split())
    ascii_chars = len(text.encode("ascii", "ignore"))  # counted in C: compaction estimates whole histories
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)
