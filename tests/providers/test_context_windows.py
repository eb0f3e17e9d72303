from __future__ import annotations

import pytest

from app.providers.context_windows import DEFAULT_CONTEXT_WINDOW, context_window, estimate_tokens


@pytest.mark.parametrize(
    ("provider", "model", "window"),
    [
        ("anthropic", "claude-sonnet-4-5", 200_000),
        ("openai", "gpt-4", 8_192),
        ("openai", "gpt-4o-mini", 128_000),
        ("openai", "gpt-4-turbo-2024-04-09", 128_000),
        ("gemini", "gemini-1.5-pro-002", 2_097_152),
        ("openai", "llama3:8b", DEFAULT_CONTEXT_WINDOW),
        ("openai", "o1-mini-2024-09-12", 128_000),
        ("openai", "o1-2024-12-17", 200_000),
        ("gemini", "gemini-3-pro-preview", 1_048_576),
        ("scripted", "anything", DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_the_longest_known_prefix_names_the_window(provider: str, model: str, window: int) -> None:
    assert context_window(provider, model) == window


def test_the_agents_override_wins_over_the_table() -> None:
    assert context_window("anthropic", "claude-sonnet-4-5", override=1_000) == 1_000


def test_scripted_counts_one_token_a_word() -> None:
    assert estimate_tokens("one two  three\nfour", "scripted") == 4


def test_ascii_costs_a_token_per_four_characters_and_other_scripts_one_per_character() -> None:
    assert estimate_tokens("abcdefgh", "openai") == 2
    assert estimate_tokens("abcde", "anthropic") == 2
    assert estimate_tokens("日本語", "gemini") == 3
