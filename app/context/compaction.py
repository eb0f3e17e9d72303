"""Compaction of the built-in context, as pure functions (DESIGN.md "Compaction (built-in context)").

What to summarise (everything but the last `keep_last_messages`, never separating a tool result
from the assistant message that called it), the fixed summarisation prompt, the window fallback
(drop the oldest messages), and the clipping of long tool results in a prompt. Sizes are tokens as
`app.providers.context_windows.estimate_tokens` counts them, plus the per-message framing; the
model call, the storage and the events are the caller's (app/context/compactor.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from app.providers.attachments import described, estimated_tokens
from app.providers.base import ChatMessage
from app.providers.context_windows import MESSAGE_OVERHEAD_TOKENS, estimate_tokens

Strategy = Literal["summarize", "window"]
DEFAULT_TRIGGER_RATIO = 0.8
DEFAULT_KEEP_LAST = 6
TOOL_RESULT_SHARE = 0.1
"""One tool result may fill at most this share of the window in a prompt; the rest is clipped."""
SUMMARY_OUTPUT_SHARE = 0.1
"""The summary may be at most this share of the window (its call's `max_tokens`)."""
CLIP_MARK = "\n[… {count} characters clipped; the full result is stored …]\n"

SUMMARY_SYSTEM_PROMPT = (
    "You write the working memory of an assistant whose conversation has grown too long to keep. "
    "You are given a transcript (and possibly the summary of what came before it). Write a summary "
    "that lets the assistant continue the conversation as if it had read everything. Keep: the "
    "user's goals, requests and constraints, in their own words where they matter; decisions made "
    "and why; facts, names, numbers, identifiers, paths and URLs the conversation depends on; what "
    "each tool call established and any errors; open questions and unfinished work. Leave out "
    "pleasantries and repetition. Write plain prose and short lists, in the conversation's language, "
    "without addressing the user and without inventing anything the transcript does not say."
)
"""Fixed: the same instructions for every agent and provider (see docs/decisions.md)."""
SUMMARY_LABEL = "Summary of the earlier conversation (it replaces the messages it covers):"


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A summary standing for the first `message_count` messages of its session."""

    content: str
    message_count: int
    model_calls: int
    """Summarisation calls the session has made up to and including this summary (the scripted
    provider's call index counts them)."""


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """An agent's `context.compaction` with its effective window."""

    strategy: Strategy
    trigger_ratio: float
    keep_last_messages: int
    window: int
    provider: str

    @property
    def trigger_tokens(self) -> int:
        return int(self.trigger_ratio * self.window)

    @property
    def tool_result_tokens(self) -> int:
        return max(int(self.window * TOOL_RESULT_SHARE), 1)

    @property
    def summary_tokens(self) -> int:
        return max(int(self.window * SUMMARY_OUTPUT_SHARE), 1)


def message_tokens(message: ChatMessage, provider: str) -> int:
    """A message's size: its text, its tool calls' names and arguments, and the framing around it."""
    size = estimate_tokens(message.content, provider) + MESSAGE_OVERHEAD_TOKENS
    size += sum(estimated_tokens(a) for a in message.attachments)
    for call in message.tool_calls:
        size += estimate_tokens(f"{call.name} {call.arguments}", provider)
    return size


def prompt_tokens(system: str, messages: Sequence[ChatMessage], provider: str) -> int:
    return estimate_tokens(system, provider) + sum(message_tokens(m, provider) for m in messages)


def summary_cut(messages: Sequence[ChatMessage], keep_last: int) -> int:
    """How many leading messages to summarise so that at least `keep_last` stay verbatim.

    The cut moves back past tool results, so a kept result always has its call with it.
    """
    cut = max(len(messages) - keep_last, 0)
    while 0 < cut < len(messages) and messages[cut].role == "tool":
        cut -= 1
    return cut


def window_start(system: str, messages: Sequence[ChatMessage], budget: int, provider: str) -> int:
    """The first message to keep so that the prompt fits `budget`: drop the oldest, never a lone result.

    Keeps at least the last message (with its call, if it is a tool result) even if that alone is
    over the budget; clipping long tool results is what bounds such a message.
    """
    sizes = [message_tokens(m, provider) for m in messages]
    total = estimate_tokens(system, provider) + sum(sizes)
    start = 0
    last_call = max((i for i, m in enumerate(messages) if m.role != "tool"), default=len(messages))
    while total > budget and start < last_call:
        total -= sizes[start]
        start += 1
        while start < last_call and messages[start].role == "tool":
            total -= sizes[start]
            start += 1
    return start


def clip_tool_results(messages: Sequence[ChatMessage], max_tokens: int, provider: str) -> list[ChatMessage]:
    """Tool results over `max_tokens` keep their head and tail with a mark in between (prompt only)."""
    return [replace(m, content=clip_text(m.content, max_tokens, provider)) if m.role == "tool" else m for m in messages]


def clip_text(text: str, max_tokens: int, provider: str) -> str:
    size = estimate_tokens(text, provider)
    if size <= max_tokens:
        return text
    keep = int(len(text) * max_tokens / size)
    while True:
        head, tail = text[: keep // 2], text[len(text) - (keep - keep // 2) :] if keep > 1 else ""
        clipped = head + CLIP_MARK.format(count=len(text) - len(head) - len(tail)) + tail
        if estimate_tokens(clipped, provider) <= max_tokens or keep == 0:
            return clipped
        keep = keep * 3 // 4


def summary_message(summary: str) -> ChatMessage:
    """How a summary stands in the prompt: the first user message, ahead of the kept messages."""
    return ChatMessage(role="user", content=f"{SUMMARY_LABEL}\n\n{summary}")


def transcript(messages: Sequence[ChatMessage]) -> str:
    """The messages to summarise as plain text, one block per message, tool calls spelled out, attachments
    named (a summary describes them; the messages compaction keeps keep their attachments)."""
    blocks = []
    for message in messages:
        if message.role == "tool":
            status = "error" if message.is_error else "result"
            blocks.append(f"[tool {status} of {message.name or 'a tool'}]\n{message.content}")
            continue
        text = "\n".join([*(described(a) for a in message.attachments), message.content])
        for call in message.tool_calls:
            text += f"\n(called {call.name} with {call.arguments})"
        blocks.append(f"[{message.role}]\n{text.strip()}")
    return "\n\n".join(blocks)


def summary_request(previous: str | None, messages: Sequence[ChatMessage]) -> ChatMessage:
    """The one user message of a summarisation call: the earlier summary, then the new transcript."""
    parts = []
    if previous:
        parts.append(f"<summary_so_far>\n{previous}\n</summary_so_far>")
    parts.append(f"<transcript>\n{transcript(messages)}\n</transcript>")
    parts.append(
        "Write the updated summary of everything above (the summary so far included)."
        if previous
        else "Write the summary of the transcript."
    )
    return ChatMessage(role="user", content="\n\n".join(parts))


def summary_chunks(
    previous: str | None, messages: Sequence[ChatMessage], policy: CompactionPolicy
) -> list[list[ChatMessage]]:
    """The messages to summarise, split so that each summarisation call fits the window.

    Each call sees the fixed instructions, the summary so far (after the first call at most
    `summary_tokens`) and one chunk, and leaves `summary_tokens` for its reply; tool results are
    clipped to their share of the window first, so no single message outgrows a chunk.
    """
    previous_size = estimate_tokens(previous, policy.provider) if previous else 0
    fixed = estimate_tokens(SUMMARY_SYSTEM_PROMPT, policy.provider) + max(previous_size, policy.summary_tokens)
    fixed += policy.summary_tokens + 64
    budget = max(policy.window - fixed, policy.tool_result_tokens)
    chunks: list[list[ChatMessage]] = [[]]
    used = 0
    for message in clip_tool_results(messages, policy.tool_result_tokens, policy.provider):
        size = message_tokens(message, policy.provider)
        if chunks[-1] and used + size > budget:
            chunks.append([])
            used = 0
        chunks[-1].append(message)
        used += size
    return [c for c in chunks if c]
