"""Chat Completions behind the Provider protocol: the official `openai` SDK, streaming, client-side tools.

The same code talks to OpenAI and to OpenAI-compatible servers (vLLM, Ollama, LM Studio, TGI) through
a `base_url`. What such servers really stream is handled: tool-call arguments in fragments over many
chunks, several calls told apart only by `index`, no usage chunk (then usage is estimated from the
text, see `app/providers/usage.py`), and `finish_reason: "length"` in the middle of a call.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletionChunk
from openai.types.shared_params import ResponseFormatJSONSchema

from app.providers import stop_reasons
from app.providers.base import ModelRequest, ModelResponse, ProviderError, ProviderEvent, TextDelta, ToolCall
from app.providers.errors import redact, status_error
from app.providers.openai_messages import to_openai_messages, to_openai_tools
from app.providers.tool_schema import ToolNames
from app.providers.usage import estimated_usage
from app.structured.schema import strict_compatible

OPENAI_API_HOST = "api.openai.com"


class OpenAIProvider:
    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self._client = client

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        client = self._client
        names = ToolNames.for_tools("openai", request.tools)
        accumulator = ChunkAccumulator()
        try:
            stream = await client.chat.completions.create(
                model=_model_name(request),
                messages=to_openai_messages(request.system, request.messages, names, request.files),
                tools=to_openai_tools(request.tools, names) or openai.omit,
                stream=True,
                stream_options={"include_usage": True},
                response_format=_response_format(request),
                max_completion_tokens=request.max_tokens if _is_openai(client) else openai.omit,
                max_tokens=openai.omit if _is_openai(client) else request.max_tokens,
            )
            async with stream:
                async for chunk in stream:
                    text = accumulator.add(chunk)
                    if text:
                        yield TextDelta(text)
        except openai.OpenAIError as exc:
            # The SDK's own message carries the raw body; only a clipped, redacted summary travels on.
            raise to_provider_error(exc, api_key=client.api_key) from None
        yield accumulator.response(request, names)


def _response_format(request: ModelRequest) -> ResponseFormatJSONSchema | openai.Omit:
    """`strict` only where OpenAI's strict mode takes the schema; our own check runs either way."""
    schema = request.output_schema
    if schema is None:
        return openai.omit
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": strict_compatible(schema)},
    }


def _model_name(request: ModelRequest) -> str:
    name = request.model.get("name")
    if not isinstance(name, str) or not name:
        raise ProviderError("provider_bad_request", "model.name is required for the openai provider")
    return name


def _is_openai(client: openai.AsyncOpenAI) -> bool:
    """OpenAI's reasoning models refuse `max_tokens`; compatible servers do not all know its successor
    `max_completion_tokens`, so each gets the one it takes."""
    return client.base_url.host == OPENAI_API_HOST


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ChunkAccumulator:
    """Folds streamed chunks into the text, the tool calls (by index) and the usage."""

    text_parts: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def add(self, chunk: ChatCompletionChunk) -> str | None:
        """Take one chunk; returns the text it adds, if any."""
        if chunk.usage is not None:
            self.input_tokens = chunk.usage.prompt_tokens
            self.output_tokens = chunk.usage.completion_tokens
        if not chunk.choices:
            return None
        choice = chunk.choices[0]
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        delta = choice.delta
        for position, fragment in enumerate(delta.tool_calls or ()):
            index = fragment.index if isinstance(fragment.index, int) else position
            call = self.calls.setdefault(index, _PartialCall())
            call.id = call.id or fragment.id or ""
            function = fragment.function
            if function is None:
                continue
            call.name = call.name or function.name or ""
            if function.arguments:
                arguments: Any = function.arguments
                call.argument_parts.append(arguments if isinstance(arguments, str) else json.dumps(arguments))
        text = delta.content or delta.refusal
        if text:
            self.text_parts.append(text)
            return text
        return None

    def response(self, request: ModelRequest, names: ToolNames) -> ModelResponse:
        text = "".join(self.text_parts)
        truncated = self.finish_reason == "length"
        calls = [
            call
            for _, partial in sorted(self.calls.items())
            if (call := _tool_call(partial, names, truncated=truncated)) is not None
        ]
        usage = estimated_usage(request, text, calls, "openai")
        return ModelResponse(
            text=text,
            tool_calls=calls,
            input_tokens=self.input_tokens if self.input_tokens is not None else usage[0],
            output_tokens=self.output_tokens if self.output_tokens is not None else usage[1],
            stop_reason=stop_reasons.from_openai(self.finish_reason, has_tool_calls=bool(calls)),
        )


def _tool_call(partial: _PartialCall, names: ToolNames, *, truncated: bool) -> ToolCall | None:
    """The finished call; None for a call the length limit cut off mid-arguments. A call the server sent
    without an id keeps it empty: it gets one of ours with the reply (app/providers/call_ids.py)."""
    raw = "".join(partial.argument_parts).strip()
    try:
        arguments: Any = json.loads(raw) if raw else {}
    except ValueError:
        if truncated:
            return None
        raise ProviderError("provider_error", f"tool call {partial.name!r} came with invalid JSON arguments") from None
    if not isinstance(arguments, dict):
        raise ProviderError("provider_error", f"tool call {partial.name!r} arguments are not an object")
    if not partial.name:
        raise ProviderError("provider_error", "the model streamed a tool call without a name")
    return ToolCall(id=partial.id, name=names.ours(partial.name), arguments=arguments)


def to_provider_error(exc: openai.OpenAIError, *, api_key: str | None) -> ProviderError:
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError("provider_timeout", "the OpenAI API did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("provider_unavailable", "could not reach the OpenAI API")
    if isinstance(exc, openai.APIStatusError):
        return status_error("OpenAI API", exc.status_code, _detail(exc), secrets=[api_key])
    if isinstance(exc, openai.APIError):
        # An error object inside a 200 stream (compatible servers send them mid-stream).
        return status_error("OpenAI API", 200, _detail(exc), secrets=[api_key], code="provider_error")
    return ProviderError("provider_error", redact(f"OpenAI SDK error ({type(exc).__name__})", [api_key]))


def _detail(exc: openai.APIError) -> str | None:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message
    return exc.message if isinstance(exc.message, str) else None
