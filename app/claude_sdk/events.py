"""Claude Agent SDK messages → our turn events, so a client cannot tell the runtimes apart.

One model call is read from the partial-message stream (`include_partial_messages`): each text
delta is a `message.delta`, each tool call a `tool_call.requested` as soon as its block is complete
(Claude Code asks its `PreToolUse` hook then, while the reply still streams, and the decision
events follow the request), and `message_stop` closes the call with `message.completed` (the deltas
concatenated, and the stop reason) and its `usage`. The results Claude Code feeds back become
`tool_call.completed`. The `ResultMessage` ends the SDK turn; the runtime settles ours from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, ToolResultBlock, ToolUseBlock, UserMessage

from app.claude_sdk.surface import plain_name
from app.providers.base import ToolCall

Event = tuple[str, dict[str, Any]]


@dataclass(slots=True)
class ModelCall:
    text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass(slots=True)
class EventMapper:
    """Stateful across one SDK turn: the open model call, the tool calls asked for and their names."""

    call: ModelCall = field(default_factory=ModelCall)
    closed: list[ModelCall] = field(default_factory=list)
    """Model calls closed since the caller last took them (`take_closed`)."""
    names: dict[str, str] = field(default_factory=dict)
    opened: int = 0
    """Model calls started so far."""
    last_text: str = ""
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def map(self, message: object) -> list[Event]:
        if isinstance(message, StreamEvent):
            return self._stream(message.event)
        if isinstance(message, AssistantMessage):
            return self._assistant(message)
        if isinstance(message, UserMessage):
            return self._results(message)
        return []

    def _stream(self, event: dict[str, Any]) -> list[Event]:
        kind = event.get("type")
        if kind == "message_start":
            self.opened += 1
            usage = event.get("message", {}).get("usage") or {}
            self.call = ModelCall(input_tokens=_input_tokens(usage), output_tokens=int(usage.get("output_tokens") or 0))
            return []
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                self.call.text += delta["text"]
                return [("message.delta", {"text": delta["text"]})]
            return []
        if kind == "message_delta":
            self.call.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.call.stop_reason
            usage = event.get("usage") or {}
            self.call.output_tokens = int(usage.get("output_tokens") or self.call.output_tokens)
            return []
        if kind == "message_stop":
            return self._close_call()
        return []

    def _close_call(self) -> list[Event]:
        call = self.call
        self.model_calls += 1
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.last_text = call.text
        self.closed.append(call)
        self.call = ModelCall()
        return [
            ("message.completed", {"text": call.text, "stop_reason": call.stop_reason or "end_turn"}),
            ("usage", {"input_tokens": call.input_tokens, "output_tokens": call.output_tokens, "kind": "model"}),
        ]

    def take_closed(self) -> list[ModelCall]:
        closed, self.closed = self.closed, []
        return closed

    def _assistant(self, message: AssistantMessage) -> list[Event]:
        if message.parent_tool_use_id is not None:
            return []  # a subagent's inner calls are its own business
        events: list[Event] = []
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                call = ToolCall(id=block.id, name=plain_name(block.name), arguments=dict(block.input))
                self.names[call.id] = call.name
                self.call.tool_calls.append(call)
                events.append(
                    ("tool_call.requested", {"tool_call_id": call.id, "name": call.name, "arguments": call.arguments})
                )
        return events

    def _results(self, message: UserMessage) -> list[Event]:
        if not isinstance(message.content, list):
            return []
        events: list[Event] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                events.append(
                    (
                        "tool_call.completed",
                        {
                            "tool_call_id": block.tool_use_id,
                            "name": self.names.get(block.tool_use_id, ""),
                            "is_error": bool(block.is_error),
                            "result": result_text(block.content),
                        },
                    )
                )
        return events


def result_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


def _input_tokens(usage: dict[str, Any]) -> int:
    """Prompt tokens of the call, cached or not (what counts against the budget)."""
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(key) or 0) for key in keys)


def is_final(message: object) -> bool:
    return isinstance(message, ResultMessage)
