"""The one protocol every LLM provider implements, in a provider-neutral message shape."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    """Unique among the session's calls once the reply is in (app/providers/call_ids.py)."""
    name: str
    arguments: dict[str, Any]
    provider_id: str | None = None
    """The id the provider sent, when `id` had to be one of ours instead (it sent none, a bad one, or a taken one)."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file a user message refers to; its bytes are read for each model call (`ModelRequest.files`)."""

    file_id: str
    kind: Literal["image", "pdf", "text"]
    name: str
    content_type: str
    size: int


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One history entry. `tool` messages carry the result of the call named by `tool_call_id`."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: dict[str, Any]
    """The snapshot's `model` block (provider, name, max_tokens, script, ...)."""
    system: str
    messages: list[ChatMessage]
    tools: list[ToolSpec]
    max_tokens: int
    call_index: int = 0
    """How many model calls this session made before this one (the scripted provider's cursor)."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema a final answer must meet: each provider asks for it natively where it can."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """The bytes of the files the messages' attachments name, by file id (a deleted file is absent)."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The last item of every stream: the whole reply."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None


ProviderEvent = TextDelta | ModelResponse


class ProviderError(Exception):
    """A model call that failed; `code` ends up in `turn.ended.error.code`.

    Codes: provider_not_configured, provider_auth_failed, provider_rate_limited, provider_overloaded,
    provider_timeout, provider_unavailable, provider_bad_request, provider_error.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Provider(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Yield TextDelta items as text arrives, then exactly one ModelResponse. Raise ProviderError."""
        ...
