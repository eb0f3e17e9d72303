"""What the provider tests share: the tools they offer, a request, and reading a stream to its end."""

from __future__ import annotations

import json
from typing import Any

import httpx
import respx

from app.providers.base import ChatMessage, ModelRequest, ModelResponse, Provider, TextDelta, ToolSpec

CALCULATOR = ToolSpec(
    "calculator",
    "Evaluate arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
)
ECHO = ToolSpec("echo", "Echo text.", {"type": "object", "properties": {"text": {"type": "string"}}})


def chat_request(
    model: dict[str, Any],
    messages: list[ChatMessage] | None = None,
    tools: list[ToolSpec] | None = None,
    *,
    max_tokens: int,
) -> ModelRequest:
    return ModelRequest(
        model=model,
        system="You are terse.",
        messages=messages or [ChatMessage(role="user", content="hi")],
        tools=tools or [],
        max_tokens=max_tokens,
    )


def event_stream(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


async def collect(provider: Provider, request: ModelRequest) -> tuple[list[str], ModelResponse]:
    """The text deltas of one streamed call and its one closing response (which comes last)."""
    deltas: list[str] = []
    responses: list[ModelResponse] = []
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            assert not responses, "a delta arrived after the ModelResponse"
            deltas.append(event.text)
        else:
            responses.append(event)
    assert len(responses) == 1
    return deltas, responses[0]


def sent(route: respx.Route, index: int = -1) -> dict[str, Any]:
    """The JSON body of the route's `index`-th request."""
    body: dict[str, Any] = json.loads(route.calls[index].request.content)
    return body
