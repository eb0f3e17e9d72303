"""Folds the raw Messages stream into text deltas and one ModelResponse.

The SDK's `messages.stream()` helper rebuilds a snapshot of the whole message on every event; a turn
only needs the deltas and the end result, so the provider reads the raw event stream and keeps just
the text, the tool-use blocks and the usage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import RawMessageStreamEvent

from app.providers.base import ModelResponse, ProviderError, ToolCall
from app.providers.tool_schema import ToolNames


@dataclass(slots=True)
class _ToolUse:
    id: str
    name: str
    json_parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class MessageAccumulator:
    text_parts: list[str] = field(default_factory=list)
    tools: dict[int, _ToolUse] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None

    def add(self, event: RawMessageStreamEvent) -> str | None:
        """Take one event; returns the text it adds, if any."""
        if event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.text_parts.append(delta.text)
                return delta.text
            if delta.type == "input_json_delta" and event.index in self.tools:
                self.tools[event.index].json_parts.append(delta.partial_json)
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.tools[event.index] = _ToolUse(block.id, block.name)
            elif block.type == "text" and block.text:
                self.text_parts.append(block.text)
                return block.text
        elif event.type == "message_start":
            usage = event.message.usage
            self.input_tokens = (
                usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
            )
            self.output_tokens = usage.output_tokens
        elif event.type == "message_delta":
            self.output_tokens = event.usage.output_tokens
            self.stop_reason = event.delta.stop_reason
        return None

    def response(self, names: ToolNames | None = None) -> ModelResponse:
        return ModelResponse(
            text="".join(self.text_parts),
            tool_calls=[_call(tool, names or ToolNames("anthropic")) for _, tool in sorted(self.tools.items())],
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            stop_reason=self.stop_reason,
        )


def _call(tool: _ToolUse, names: ToolNames) -> ToolCall:
    raw = "".join(tool.json_parts)
    try:
        arguments: Any = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise ProviderError("provider_error", f"tool call {tool.name!r} came with invalid JSON arguments") from exc
    if not isinstance(arguments, dict):
        raise ProviderError("provider_error", f"tool call {tool.name!r} arguments are not an object")
    return ToolCall(id=tool.id, name=names.ours(tool.name), arguments=arguments)
