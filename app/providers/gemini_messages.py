"""Neutral history and tools to Gemini `contents` and function declarations.

Gemini wants `user` and `model` to alternate, every function response of one model step in the
single user content that follows it, and (Gemini 3) each replayed function call carrying the
`thought_signature` the model sent with it. Signatures seen in this turn are replayed as received;
a call from an earlier turn (our history does not keep them) carries the validator-skip sentinel
that Google documents for histories built outside the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from google.genai import types

from app.providers.attachments import inlined
from app.providers.base import Attachment, ChatMessage, ProviderError, ToolSpec
from app.providers.tool_schema import ToolNames, object_schema

GeminiRole = Literal["user", "model"]
SKIP_SIGNATURE = b"skip_thought_signature_validator"


def to_gemini_tools(specs: Sequence[ToolSpec], names: ToolNames) -> list[types.Tool]:
    if not specs:
        return []
    declarations = [
        types.FunctionDeclaration(
            name=names.wire(spec.name),
            description=spec.description,
            parameters_json_schema=object_schema(spec.input_schema),
        )
        for spec in specs
    ]
    return [types.Tool(function_declarations=declarations)]


def to_gemini_contents(
    history: Sequence[ChatMessage],
    names: ToolNames,
    signatures: Mapping[str, bytes],
    files: Mapping[str, bytes] | None = None,
) -> list[types.Content]:
    turns: list[tuple[GeminiRole, list[types.Part]]] = []
    call_names = {call.id: call.name for message in history for call in message.tool_calls}
    for message in history:
        role, parts = _parts(message, names, signatures, call_names)
        if message.attachments:
            parts = [*(_attachment_part(a, files or {}) for a in message.attachments), *parts]
        if not parts:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(parts)
        else:
            turns.append((role, parts))
    return [types.Content(role=role, parts=parts) for role, parts in turns]


def _attachment_part(attachment: Attachment, files: Mapping[str, bytes]) -> types.Part:
    """Images and PDFs as inline data, text files as text."""
    data = files.get(attachment.file_id)
    if attachment.kind == "text" or data is None:
        return types.Part(text=inlined(attachment, files))
    return types.Part(inline_data=types.Blob(mime_type=attachment.content_type, data=data))


def _parts(
    message: ChatMessage, names: ToolNames, signatures: Mapping[str, bytes], call_names: Mapping[str, str]
) -> tuple[GeminiRole, list[types.Part]]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ProviderError("provider_bad_request", "a tool message in the history has no tool_call_id")
        name = message.name or call_names.get(message.tool_call_id, "tool")
        key = "error" if message.is_error else "result"
        response = types.FunctionResponse(
            id=message.tool_call_id, name=names.wire(name), response={key: message.content}
        )
        return "user", [types.Part(function_response=response)]
    parts: list[types.Part] = []
    if message.content:
        parts.append(types.Part(text=message.content))
    if message.role == "user":
        return "user", parts
    for position, call in enumerate(message.tool_calls):
        streamed = signatures.get(call.id) or signatures.get(call.provider_id or "")
        signature = streamed or (SKIP_SIGNATURE if position == 0 else None)
        parts.append(
            types.Part(
                function_call=types.FunctionCall(id=call.id, name=names.wire(call.name), args=call.arguments),
                thought_signature=signature,
            )
        )
    return "model", parts
