"""A Context Engine's assembled context as a system prompt and history (the built-in context's own
prompt, with compaction, is app/context/compactor.py)."""

from __future__ import annotations

from app.context.engine_client import AssembledContext
from app.providers.base import ChatMessage


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
