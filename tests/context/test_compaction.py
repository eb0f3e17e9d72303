"""The compaction algorithm as pure functions: what is summarised, the window fallback, clipping."""

from __future__ import annotations

import pytest

from app.context.compaction import (
    CLIP_MARK,
    SUMMARY_SYSTEM_PROMPT,
    CompactionPolicy,
    clip_text,
    clip_tool_results,
    message_tokens,
    prompt_tokens,
    summary_chunks,
    summary_cut,
    summary_request,
    window_start,
)
from app.providers.base import ChatMessage, ToolCall
from app.providers.context_windows import MESSAGE_OVERHEAD_TOKENS, estimate_tokens


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str, *calls: str) -> ChatMessage:
    return ChatMessage(
        role="assistant", content=text, tool_calls=tuple(ToolCall(c, "echo", {"text": c}) for c in calls)
    )


def result(call_id: str, text: str = "ok") -> ChatMessage:
    return ChatMessage(role="tool", content=text, tool_call_id=call_id, name="echo")


CONVERSATION = [
    user("one"),                      # 0
    assistant("a", "c1", "c2"),       # 1
    result("c1"),                     # 2
    result("c2"),                     # 3
    assistant("done"),                # 4
    user("two"),                      # 5
    assistant("b", "c3"),             # 6
    result("c3"),                     # 7
    assistant("fine"),                # 8
]  # fmt: skip


def policy(window: int = 1000, **fields: object) -> CompactionPolicy:
    values: dict[str, object] = {"strategy": "summarize", "trigger_ratio": 0.8, "keep_last_messages": 4,
                                 "window": window, "provider": "scripted"}  # fmt: skip
    values.update(fields)
    return CompactionPolicy(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("keep_last", "cut"),
    [(1, 8), (2, 6), (3, 6), (4, 5), (5, 4), (6, 1), (7, 1), (8, 1), (9, 0), (20, 0)],
)
def test_the_cut_keeps_at_least_the_last_messages_and_never_orphans_a_result(keep_last: int, cut: int) -> None:
    assert summary_cut(CONVERSATION, keep_last) == cut
    kept = CONVERSATION[cut:]
    assert len(kept) >= min(keep_last, len(CONVERSATION))
    called = {c.id for m in kept for c in m.tool_calls}
    assert all(m.tool_call_id in called for m in kept if m.role == "tool")


def test_scripted_estimates_count_words_and_framing() -> None:
    message = user("three little words")
    assert message_tokens(message, "scripted") == 3 + MESSAGE_OVERHEAD_TOKENS
    assert prompt_tokens("be brief", [message], "scripted") == 2 + 3 + MESSAGE_OVERHEAD_TOKENS
    with_call = assistant("x", "c9")
    assert message_tokens(with_call, "scripted") > message_tokens(assistant("x"), "scripted")


def test_the_window_drops_the_oldest_until_the_prompt_fits_and_keeps_calls_with_results() -> None:
    sizes = [message_tokens(m, "scripted") for m in CONVERSATION]
    budget = sum(sizes[4:]) + 2
    start = window_start("sys tem", CONVERSATION, budget, "scripted")
    assert start == 4
    assert prompt_tokens("sys tem", CONVERSATION[start:], "scripted") <= budget
    tight = window_start("", CONVERSATION, sum(sizes[7:]), "scripted")
    assert CONVERSATION[tight].role != "tool"
    assert tight == 8 or CONVERSATION[tight].tool_calls


def test_the_window_keeps_the_last_message_even_when_it_alone_is_too_big() -> None:
    messages = [user("hello"), assistant("x", "c1"), result("c1", "big " * 500)]
    assert window_start("", messages, 10, "scripted") == 1
    assert window_start("", messages, 10_000, "scripted") == 0


def test_long_tool_results_are_clipped_in_the_prompt_only() -> None:
    long = "word " * 1000
    original = [user("q"), assistant("", "c1"), result("c1", long)]
    clipped = clip_tool_results(original, 100, "scripted")
    assert original[2].content == long
    assert len(clipped[2].content.split()) <= 100
    assert "characters clipped" in clipped[2].content
    assert clipped[2].content.startswith("word word")
    assert clipped[:2] == original[:2]


@pytest.mark.parametrize("provider", ["anthropic", "scripted"])
def test_clip_text_fits_the_limit_and_keeps_both_ends(provider: str) -> None:
    text = "START " + "lorem ipsum dolor sit amet " * 2000 + " END"
    clipped = clip_text(text, 200, provider)
    assert estimate_tokens(clipped, provider) <= 200
    assert clipped.startswith("START")
    assert clipped.endswith("END")
    assert clip_text("short", 200, provider) == "short"
    assert CLIP_MARK.split("{")[0] in clipped


def test_the_summary_request_carries_the_previous_summary_and_the_transcript() -> None:
    first = summary_request(None, CONVERSATION[:5])
    assert "<summary_so_far>" not in first.content
    assert "(called echo with {'text': 'c1'})" in first.content
    assert "[tool result of echo]\nok" in first.content
    later = summary_request("the user said one", CONVERSATION[5:])
    assert later.content.index("the user said one") < later.content.index("[user]\ntwo")
    assert "summary so far" in later.content
    assert "summary" in SUMMARY_SYSTEM_PROMPT


def test_summary_chunks_split_a_transcript_larger_than_the_window() -> None:
    messages = [user(f"message {i} " + "filler " * 40) for i in range(60)]
    small = policy(window=600)
    chunks = summary_chunks("an earlier summary", messages, small)
    assert len(chunks) > 1
    assert [m for chunk in chunks for m in chunk] == messages
    for chunk in chunks:
        assert prompt_tokens(SUMMARY_SYSTEM_PROMPT, [summary_request("x " * small.summary_tokens, chunk)],
                             "scripted") <= small.window  # fmt: skip
    assert summary_chunks(None, messages[:2], policy(window=100_000)) == [messages[:2]]
