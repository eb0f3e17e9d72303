"""Every provider's finish reason in the one vocabulary of `message.completed.stop_reason`.

`end_turn` (the model finished), `tool_use` (it asks for tools), `max_tokens` (cut at the call's
limit), `stop_sequence`, `refusal` (a safety or content filter stopped it).
"""

from __future__ import annotations

_OPENAI = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_GEMINI = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
}


def normalise(table: dict[str, str], raw: str | None, *, has_tool_calls: bool) -> str:
    """The normalised reason; tool calls win over a plain stop (some servers say `stop` with calls)."""
    reason = table.get(raw or "", "end_turn")
    if has_tool_calls and reason == "end_turn":
        return "tool_use"
    return reason


def from_openai(raw: str | None, *, has_tool_calls: bool) -> str:
    return normalise(_OPENAI, raw, has_tool_calls=has_tool_calls)


def from_gemini(raw: str | None, *, has_tool_calls: bool) -> str:
    return normalise(_GEMINI, raw, has_tool_calls=has_tool_calls)
