"""Neutral history and tools to Chat Completions shapes (also what OpenAI-compatible servers take)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)

from app.providers.attachments import base64_of, inlined
from app.providers.base import ChatMessage, ProviderError, ToolSpec
from app.providers.tool_schema import ToolNames, object_schema

ERROR_PREFIX = "error: "
"""Chat Completions has no error flag on a tool result; the model reads it from the content."""


def to_openai_tools(specs: Sequence[ToolSpec], names: ToolNames) -> list[ChatCompletionFunctionToolParam]:
    return [
        {
            "type": "function",
            "function": {
                "name": names.wire(spec.name),
                "description": spec.description,
                "parameters": object_schema(spec.input_schema),
            },
        }
        for spec in specs
    ]


def to_openai_messages(
    system: str, history: Sequence[ChatMessage], names: ToolNames, files: Mapping[str, bytes] | None = None
) -> list[ChatCompletionMessageParam]:
    messages: list[ChatCompletionMessageParam] = []
    if system:
        messages.append({"role": "system", "content": system})
    for message in history:
        if message.role == "user" and message.attachments:
            messages.append({"role": "user", "content": _user_parts(message, files or {})})
        elif message.role == "user":
            messages.append({"role": "user", "content": message.content})
        elif message.role == "assistant":
            messages.append(_assistant(message, names))
        else:
            if not message.tool_call_id:
                raise ProviderError("provider_bad_request", "a tool message in the history has no tool_call_id")
            content = f"{ERROR_PREFIX}{message.content}" if message.is_error else message.content
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
    return messages


def _user_parts(message: ChatMessage, files: Mapping[str, bytes]) -> list[ChatCompletionContentPartParam]:
    """Images as `image_url` data URLs, PDFs as `file` parts with their data, text files inlined."""
    parts: list[ChatCompletionContentPartParam] = []
    for attachment in message.attachments:
        data = files.get(attachment.file_id)
        if attachment.kind == "text" or data is None:
            parts.append({"type": "text", "text": inlined(attachment, files)})
        elif attachment.kind == "image":
            url = f"data:{attachment.content_type};base64,{base64_of(data)}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            file_data = f"data:application/pdf;base64,{base64_of(data)}"
            parts.append({"type": "file", "file": {"filename": attachment.name, "file_data": file_data}})
    if message.content:
        parts.append({"type": "text", "text": message.content})
    return parts


def _assistant(message: ChatMessage, names: ToolNames) -> ChatCompletionAssistantMessageParam:
    assistant: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content or None}
    calls: list[ChatCompletionMessageFunctionToolCallParam] = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": names.wire(call.name), "arguments": json.dumps(call.arguments)},
        }
        for call in message.tool_calls
    ]
    if calls:
        assistant["tool_calls"] = calls
    return assistant
