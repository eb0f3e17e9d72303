"""The built-in context: the session's stored history behind the snapshot's system prompt."""

from __future__ import annotations

from app.context.engine_client import AssembledContext
from app.providers.base import ChatMessage

MAX_PROMPT_CHARS = 400_000


def compact(messages: list[ChatMessage], *, max_chars: int = MAX_PROMPT_CHARS) -> list[ChatMessage]:
    """Drop the oldest exchanges until the history fits, always starting at a user message.

    Cutting only in front of a user message keeps every tool result next to the call it answers.
    """
    total = sum(len(m.content) for m in messages)
    start = 0
    while total > max_chars:
        following = _next_user_turn(messages, start + 1)
        if following is None:
            break
        total -= sum(len(m.content) for m in messages[start:following])
        start = following
    return messages[start:]


def _next_user_turn(messages: list[ChatMessage], after: int) -> int | None:
    for index in range(after, len(messages)):
        message = messages[index]
        if message.role == "user" and message.tool_call_id is None:
            return index
    return None


def engine_system_prompt(assembled: AssembledContext) -> str:
    parts = [assembled.system_prompt]
    parts += [str(layer.get("content", "")) for layer in assembled.layers]
    parts += [
        f'<document id="{doc.get("id", "")}">\n{doc.get("content", "")}\n</document>' for doc in assembled.documents
    ]
    return "\n\n".join(p for p in parts if p)


def engine_history(assembled: AssembledContext) -> list[ChatMessage]:
    history: list[ChatMessage] = []
    for entry in assembled.history:
        content = str(entry.get("content", ""))
        if entry.get("role") == "user":
            history.append(ChatMessage(role="user", content=content))
        elif entry.get("role") == "assistant":
            history.append(ChatMessage(role="assistant", content=content))
    return history
