"""Anthropic Messages API behind the Provider protocol: official SDK, streaming, client-side tools only.

The SDK (2.x) speaks `httpx2`, not `httpx`: a custom `http_client` must be an `httpx2.AsyncClient`
(app/providers/clients.py builds the clients).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Literal, cast

import anthropic
import httpx2
from anthropic.types import (
    AssistantMessageParam,
    ContentBlockParam,
    MessageParam,
    OutputConfigParam,
    ToolParam,
    UserMessageParam,
)

from app.providers.anthropic_stream import MessageAccumulator
from app.providers.attachments import base64_of, inlined
from app.providers.base import (
    Attachment,
    ChatMessage,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolSpec,
)
from app.providers.errors import MAX_DETAIL_CHARS, code_for_status, redact
from app.providers.tool_schema import ToolNames, object_schema
from app.structured.answer import schema_instruction
from app.structured.schema import strict_compatible

AnthropicRole = Literal["user", "assistant"]
ImageMediaType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]

_CODE_BY_ERROR_TYPE = {
    "overloaded_error": "provider_overloaded",
    "rate_limit_error": "provider_rate_limited",
    "authentication_error": "provider_auth_failed",
    "permission_error": "provider_auth_failed",
    "billing_error": "provider_auth_failed",
    "invalid_request_error": "provider_bad_request",
    "not_found_error": "provider_bad_request",
    "timeout_error": "provider_timeout",
    "api_error": "provider_error",
}


class AnthropicProvider:
    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self._client = client

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        client = self._client
        model = _model_name(request)
        names = ToolNames.for_tools("anthropic", request.tools)
        messages = to_anthropic_messages(request.messages, names, request.files)
        tools = [to_tool_param(spec, names) for spec in request.tools]
        accumulator = MessageAccumulator()
        try:
            stream = await client.messages.create(
                model=model,
                max_tokens=request.max_tokens,
                system=_system(request) or anthropic.omit,
                messages=messages,
                tools=tools or anthropic.omit,
                output_config=_output_config(request),
                stream=True,
            )
            async with stream:
                async for event in stream:
                    text = accumulator.add(event)
                    if text:
                        yield TextDelta(text)
        except anthropic.AnthropicError as exc:
            # The SDK's own message echoes the raw response body; only the redacted summary travels on.
            raise to_provider_error(exc, api_key=client.api_key) from None
        except httpx2.TimeoutException:
            # The SDK wraps errors of the request only; a read timeout while the body streams comes raw.
            raise ProviderError("provider_timeout", "the Anthropic API stopped sending mid-reply") from None
        except httpx2.TransportError:
            raise ProviderError("provider_unavailable", "the connection to the Anthropic API broke off") from None
        yield accumulator.response(names)


def _output_config(request: ModelRequest) -> OutputConfigParam | anthropic.Omit:
    """Structured outputs for a schema they take; any other schema is asked for in the system prompt."""
    schema = request.output_schema
    if schema is None or not strict_compatible(schema):
        return anthropic.omit
    return {"format": {"type": "json_schema", "schema": schema}}


def _system(request: ModelRequest) -> str:
    schema = request.output_schema
    if schema is None or strict_compatible(schema):
        return request.system
    return "\n\n".join(part for part in (request.system, schema_instruction(schema)) if part)


def _model_name(request: ModelRequest) -> str:
    name = request.model.get("name")
    if not isinstance(name, str) or not name:
        raise ProviderError("provider_bad_request", "model.name is required for the anthropic provider")
    return name


def to_tool_param(spec: ToolSpec, names: ToolNames) -> ToolParam:
    return {
        "name": names.wire(spec.name),
        "description": spec.description,
        "input_schema": object_schema(spec.input_schema),
    }


def to_anthropic_messages(
    history: Sequence[ChatMessage], names: ToolNames | None = None, files: Mapping[str, bytes] | None = None
) -> list[MessageParam]:
    """Neutral history to Anthropic turns: tool results become user blocks, same-role neighbours merge.

    The API wants user and assistant to alternate, and all results of one tool-use turn in the single
    user message that follows it.
    """
    turns: list[tuple[AnthropicRole, list[ContentBlockParam]]] = []
    for message in history:
        role, blocks = _to_blocks(message, names or ToolNames("anthropic"), files or {})
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [_message_param(role, blocks) for role, blocks in turns]


def _message_param(role: AnthropicRole, blocks: list[ContentBlockParam]) -> MessageParam:
    if role == "user":
        return UserMessageParam(role="user", content=blocks)
    return AssistantMessageParam(role="assistant", content=blocks)


def _to_blocks(
    message: ChatMessage, names: ToolNames, files: Mapping[str, bytes]
) -> tuple[AnthropicRole, list[ContentBlockParam]]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ProviderError("provider_bad_request", "a tool message in the history has no tool_call_id")
        result: ContentBlockParam = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
            "is_error": message.is_error,
        }
        return "user", [result]
    blocks: list[ContentBlockParam] = []
    # The API rejects empty or whitespace-only text blocks.
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    if message.role == "user":
        return "user", [*(_attachment_block(a, files) for a in message.attachments), *blocks]
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": names.wire(call.name), "input": call.arguments}
        for call in message.tool_calls
    )
    return "assistant", blocks


def _attachment_block(attachment: Attachment, files: Mapping[str, bytes]) -> ContentBlockParam:
    """Images as image blocks, PDFs as document blocks, text files as text (the API's own limits apply)."""
    data = files.get(attachment.file_id)
    if attachment.kind == "text" or data is None:
        return {"type": "text", "text": inlined(attachment, files)}
    encoded = base64_of(data)
    if attachment.kind == "pdf":
        return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": encoded}}
    media_type = cast(ImageMediaType, attachment.content_type)
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": encoded}}


def to_provider_error(exc: anthropic.AnthropicError, *, api_key: str | None) -> ProviderError:
    code, message = _classify(exc)
    return ProviderError(code, redact(message, [api_key]))


def _classify(exc: anthropic.AnthropicError) -> tuple[str, str]:
    if isinstance(exc, anthropic.APITimeoutError):
        return "provider_timeout", "the Anthropic API did not answer in time"
    if isinstance(exc, anthropic.APIConnectionError):
        return "provider_unavailable", "could not reach the Anthropic API"
    if isinstance(exc, anthropic.APIStatusError):
        return _status_code(exc), _status_message(exc)
    return "provider_error", f"Anthropic SDK error ({type(exc).__name__})"


def _status_code(exc: anthropic.APIStatusError) -> str:
    """The error type in the body wins: an error event inside a 200 stream carries only the type."""
    by_type = _CODE_BY_ERROR_TYPE.get(exc.type or "")
    if by_type:
        return by_type
    return code_for_status(exc.status_code)


def _status_message(exc: anthropic.APIStatusError) -> str:
    where = f"HTTP {exc.status_code}" if exc.status_code >= 400 else "an error event in the stream"
    message = f"Anthropic API returned {where}"
    if exc.type:
        message += f" ({exc.type})"
    if exc.api_message:
        message += f": {exc.api_message[:MAX_DETAIL_CHARS]}"
    if exc.request_id:
        message += f" [request-id {exc.request_id}]"
    return message
