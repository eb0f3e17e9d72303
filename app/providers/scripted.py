"""The deterministic provider for demos, tests and benchmarks (DESIGN.md "Agent configuration").

`model.script` is a list of steps, `{"text": ...}` and/or `{"tool_calls": [{"name", "arguments"}]}`;
the n-th call of a session plays `script[n % len(script)]`. Usage is one token a word: input counts
the words of the system prompt and of every history message; output counts the words of the step's
text plus one per tool call. A call's `max_tokens` cuts the reply after that many tokens (words, then
tool calls; a cut reply has no tool calls) with `stop_reason` `max_tokens`, like a real model.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

from app.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolCall,
)

_CHUNK = re.compile(r"\s*\S+\s*|\s+")


class ScriptedProvider:
    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        step = _current_step(request)
        chunks = split_words(_step_text(step))
        calls = _step_tool_calls(step, request.call_index)
        stop_reason = "tool_use" if calls else "end_turn"
        if len(chunks) + len(calls) > request.max_tokens:  # cut like a real model: no tool call after the cut
            chunks, calls, stop_reason = chunks[: request.max_tokens], [], "max_tokens"
        delay = _chunk_delay_seconds(request.model)
        for index, chunk in enumerate(chunks):
            if delay and index:
                await asyncio.sleep(delay)
            yield TextDelta(chunk)
        text = "".join(chunks)
        yield ModelResponse(
            text=text,
            tool_calls=calls,
            input_tokens=_input_tokens(request),
            output_tokens=count_words(text) + len(calls),
            stop_reason=stop_reason,
        )


def split_words(text: str) -> list[str]:
    """Word-sized chunks that concatenate exactly to `text` (whitespace stays attached)."""
    chunks: list[str] = _CHUNK.findall(text)
    return chunks


def count_words(text: str) -> int:
    return len(text.split())


def _current_step(request: ModelRequest) -> dict[str, Any]:
    script = request.model.get("script")
    if not isinstance(script, list) or not script:
        raise ProviderError("provider_bad_request", "the scripted provider needs a non-empty model.script")
    position = request.call_index % len(script)
    step = script[position]
    if not isinstance(step, dict):
        raise ProviderError("provider_bad_request", f"model.script[{position}] must be an object")
    return step


def _step_text(step: dict[str, Any]) -> str:
    text = step.get("text", "")
    if not isinstance(text, str):
        raise ProviderError("provider_bad_request", "a script step's text must be a string")
    return text


def _step_tool_calls(step: dict[str, Any], call_index: int) -> list[ToolCall]:
    raw_calls = step.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise ProviderError("provider_bad_request", "a script step's tool_calls must be a list")
    return [_tool_call(raw, f"call_{call_index}_{i}") for i, raw in enumerate(raw_calls)]


def _tool_call(raw: Any, call_id: str) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ProviderError("provider_bad_request", "a scripted tool call needs a string name")
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ProviderError("provider_bad_request", "a scripted tool call's arguments must be an object")
    return ToolCall(id=call_id, name=raw["name"], arguments=arguments)


def _chunk_delay_seconds(model: dict[str, Any]) -> float:
    delay_ms = model.get("chunk_delay_ms", 0)
    if isinstance(delay_ms, bool) or not isinstance(delay_ms, int | float) or delay_ms < 0:
        raise ProviderError("provider_bad_request", "model.chunk_delay_ms must be a non-negative number")
    return float(delay_ms) / 1000


def _input_tokens(request: ModelRequest) -> int:
    return count_words(request.system) + sum(count_words(m.content) for m in request.messages)
