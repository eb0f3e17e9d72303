"""Gemini behind the Provider protocol: `google-genai`, streaming `generate_content`, function calling.

Function calls arrive whole (no argument fragments), often several in one step and sometimes
without an id, so calls get an id of ours when the model gives none. Usage comes from
`usage_metadata` (thinking tokens count as output); a stream without it is estimated
(`app/providers/usage.py`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from app.providers import stop_reasons
from app.providers.base import ModelRequest, ModelResponse, ProviderError, ProviderEvent, TextDelta, ToolCall
from app.providers.errors import status_error
from app.providers.gemini_messages import to_gemini_contents, to_gemini_tools
from app.providers.tool_schema import ToolNames
from app.providers.usage import estimated_usage

VENDOR = "Gemini API"


class GeminiProvider:
    """One per turn: it remembers the thought signatures of the calls it streamed, to replay them."""

    def __init__(self, client: genai.Client, *, api_key: str) -> None:
        self._client = client
        self._api_key = api_key
        self._signatures: dict[str, bytes] = {}

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        names = ToolNames.for_tools("gemini", request.tools)
        config = types.GenerateContentConfig(
            system_instruction=request.system or None,
            tools=to_gemini_tools(request.tools, names) or None,
            max_output_tokens=request.max_tokens,
            response_mime_type="application/json" if request.output_schema is not None else None,
            response_json_schema=request.output_schema,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        accumulator = PartAccumulator()
        try:
            stream = await self._client.aio.models.generate_content_stream(
                model=_model_name(request),
                contents=to_gemini_contents(request.messages, names, self._signatures, request.files),  # type: ignore[arg-type]
                config=config,
            )
            async for chunk in stream:
                text = accumulator.add(chunk)
                if text:
                    yield TextDelta(text)
        except genai_errors.APIError as exc:
            raise status_error(VENDOR, exc.code or 500, exc.message, secrets=[self._api_key]) from None
        except httpx.TimeoutException:
            raise ProviderError("provider_timeout", "the Gemini API did not answer in time") from None
        except httpx.TransportError:
            raise ProviderError("provider_unavailable", "could not reach the Gemini API") from None
        response = accumulator.response(request, names)
        self._signatures.update(accumulator.signatures)
        yield response


def _model_name(request: ModelRequest) -> str:
    name = request.model.get("name")
    if not isinstance(name, str) or not name:
        raise ProviderError("provider_bad_request", "model.name is required for the gemini provider")
    return name


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class PartAccumulator:
    """Folds streamed chunks into the text, the function calls, the finish reason and the usage."""

    text_parts: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    signatures: dict[str, bytes] = field(default_factory=dict)
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def add(self, chunk: types.GenerateContentResponse) -> str | None:
        usage = chunk.usage_metadata
        if usage is not None and usage.prompt_token_count is not None:
            self.input_tokens = usage.prompt_token_count
            self.output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        if not chunk.candidates:
            return None
        candidate = chunk.candidates[0]
        if candidate.finish_reason is not None:
            self.finish_reason = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
        parts = candidate.content.parts if candidate.content is not None else None
        added = [text for part in parts or () if (text := self._part(part))]
        return "".join(added) or None

    def _part(self, part: types.Part) -> str | None:
        if part.function_call is not None:
            call = part.function_call
            call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
            self.calls.append(_Call(call_id, call.name or "", dict(call.args or {})))
            if part.thought_signature:
                self.signatures[call_id] = part.thought_signature
            return None
        if part.thought or not part.text:
            return None
        self.text_parts.append(part.text)
        return part.text

    def response(self, request: ModelRequest, names: ToolNames) -> ModelResponse:
        text = "".join(self.text_parts)
        if any(not call.name for call in self.calls):
            raise ProviderError("provider_error", "the model sent a function call without a name")
        calls = [ToolCall(id=c.id, name=names.ours(c.name), arguments=c.arguments) for c in self.calls]
        estimate = estimated_usage(request, text, calls, "gemini")
        return ModelResponse(
            text=text,
            tool_calls=calls,
            input_tokens=self.input_tokens if self.input_tokens is not None else estimate[0],
            output_tokens=self.output_tokens if self.output_tokens is not None else estimate[1],
            stop_reason=stop_reasons.from_gemini(self.finish_reason, has_tool_calls=bool(calls)),
        )
