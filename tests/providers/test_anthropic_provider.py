"""The Anthropic provider against the real SDK, with the HTTP layer replaced by an httpx2 mock transport.

The SDK 2.x sends through `httpx2`, which respx does not patch, so the fake API is plugged in as the
client's own transport: every request still goes through the SDK's real serialisation and SSE parsing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest

from app.providers.anthropic import AnthropicProvider, to_anthropic_messages
from app.providers.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ToolCall,
    ToolSpec,
)
from tests.providers.kit import CALCULATOR, collect

BASE_URL = "https://api.anthropic.test"
API_KEY = "sk-ant-api03-test-SECRET-0123456789abcdef"


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def message_start(input_tokens: int = 10) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def text_block(index: int, chunks: list[str]) -> list[dict[str, Any]]:
    deltas = [
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}}
        for chunk in chunks
    ]
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *deltas,
        {"type": "content_block_stop", "index": index},
    ]


def tool_use_block(index: int, tool_id: str, name: str, json_chunks: list[str]) -> list[dict[str, Any]]:
    start = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
    deltas = [
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": c},
        }
        for c in json_chunks
    ]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *deltas,
        {"type": "content_block_stop", "index": index},
    ]


def message_end(stop_reason: str, output_tokens: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def stream_response(*events: dict[str, Any]) -> httpx2.Response:
    return httpx2.Response(200, content=sse(*events), headers={"content-type": "text/event-stream"})


def error_response(status: int, error_type: str, message: str = "something went wrong") -> httpx2.Response:
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return httpx2.Response(status, json=body, headers={"request-id": "req_test"})


class FakeAnthropicApi:
    """Answers POST /v1/messages with queued responses and keeps every request it received."""

    def __init__(self) -> None:
        self.responses: list[httpx2.Response | Exception] = []
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.method == "POST"
        assert str(request.url) == f"{BASE_URL}/v1/messages"
        self.requests.append(request)
        outcome = self.responses.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def body(self, index: int) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.requests[index].content)
        return body


@pytest.fixture
def api() -> FakeAnthropicApi:
    return FakeAnthropicApi()


@pytest.fixture
async def provider(api: FakeAnthropicApi) -> AsyncIterator[AnthropicProvider]:
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http:
        client = anthropic.AsyncAnthropic(
            api_key=API_KEY, base_url=BASE_URL, timeout=5.0, max_retries=0, http_client=http
        )
        yield AnthropicProvider(client)


def model_request(
    messages: list[ChatMessage], *, tools: list[ToolSpec] | None = None, call_index: int = 0
) -> ModelRequest:
    return ModelRequest(
        model={"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": 512},
        system="You are terse.",
        messages=messages,
        tools=tools or [],
        max_tokens=512,
        call_index=call_index,
    )


async def test_text_deltas_concatenate_to_the_final_text_and_usage_comes_from_the_final_message(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    chunks = ["Hello", ", wor", "ld!"]
    api.responses.append(
        stream_response(message_start(input_tokens=21), *text_block(0, chunks), *message_end("end_turn", 7))
    )

    deltas, response = await collect(provider, model_request([ChatMessage(role="user", content="hi")]))

    assert deltas == chunks
    assert response == ModelResponse(
        text="Hello, world!", tool_calls=[], input_tokens=21, output_tokens=7, stop_reason="end_turn"
    )
    body = api.body(0)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 512
    assert body["system"] == "You are terse."
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert "tools" not in body
    assert api.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


async def test_tool_use_round_trip_parses_streamed_arguments_and_sends_the_result_back(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    api.responses.append(
        stream_response(
            message_start(),
            *text_block(0, ["Let me ", "compute."]),
            *tool_use_block(1, "toolu_01", "calculator", ['{"expres', 'sion": "2', '+2"}']),
            *message_end("tool_use", 30),
        )
    )
    api.responses.append(stream_response(message_start(), *text_block(0, ["It is 4."]), *message_end("end_turn", 5)))
    question = ChatMessage(role="user", content="What is 2+2?")

    _, first = await collect(provider, model_request([question], tools=[CALCULATOR]))

    assert first.tool_calls == [ToolCall(id="toolu_01", name="calculator", arguments={"expression": "2+2"})]
    assert first.text == "Let me compute."
    assert first.stop_reason == "tool_use"

    history = [
        question,
        ChatMessage(role="assistant", content=first.text, tool_calls=tuple(first.tool_calls)),
        ChatMessage(role="tool", content="4", tool_call_id="toolu_01", name="calculator"),
    ]
    deltas, second = await collect(provider, model_request(history, tools=[CALCULATOR], call_index=1))

    assert "".join(deltas) == second.text == "It is 4."
    body = api.body(1)
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me compute."},
                {"type": "tool_use", "id": "toolu_01", "name": "calculator", "input": {"expression": "2+2"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "4", "is_error": False}],
        },
    ]
    expected_tool = {
        "name": "calculator",
        "description": "Evaluate arithmetic.",
        "input_schema": CALCULATOR.input_schema,
    }
    assert body["tools"] == [expected_tool]
    assert all("type" not in tool for tool in body["tools"]), "server tools carry a type; none may be sent"


def test_tool_results_merge_into_one_user_message_and_same_roles_merge() -> None:
    calls = (
        ToolCall(id="a", name="echo", arguments={"text": "x"}),
        ToolCall(id="b", name="echo", arguments={"text": "y"}),
    )
    history = [
        ChatMessage(role="user", content="first"),
        ChatMessage(role="user", content="second"),
        ChatMessage(role="assistant", content="", tool_calls=calls),
        ChatMessage(role="tool", content="x", tool_call_id="a"),
        ChatMessage(role="tool", content="boom", tool_call_id="b", is_error=True),
        ChatMessage(role="user", content="and now?"),
        ChatMessage(role="assistant", content="   "),
        ChatMessage(role="assistant", content="done"),
    ]

    messages = to_anthropic_messages(history)

    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0]["content"] == [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "a", "name": "echo", "input": {"text": "x"}},
        {"type": "tool_use", "id": "b", "name": "echo", "input": {"text": "y"}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "x", "is_error": False},
        {"type": "tool_result", "tool_use_id": "b", "content": "boom", "is_error": True},
        {"type": "text", "text": "and now?"},
    ]
    assert messages[3]["content"] == [{"type": "text", "text": "done"}]


def test_a_tool_message_without_its_call_id_is_a_bad_request() -> None:
    with pytest.raises(ProviderError) as caught:
        to_anthropic_messages([ChatMessage(role="tool", content="4")])
    assert caught.value.code == "provider_bad_request"


@pytest.mark.parametrize(
    ("status", "error_type", "code"),
    [
        (429, "rate_limit_error", "provider_rate_limited"),
        (500, "api_error", "provider_error"),
        (529, "overloaded_error", "provider_overloaded"),
        (401, "authentication_error", "provider_auth_failed"),
        (403, "permission_error", "provider_auth_failed"),
        (400, "invalid_request_error", "provider_bad_request"),
        (404, "not_found_error", "provider_bad_request"),
    ],
)
async def test_http_errors_map_to_provider_error_codes(
    api: FakeAnthropicApi, provider: AnthropicProvider, status: int, error_type: str, code: str
) -> None:
    api.responses.append(error_response(status, error_type))

    with pytest.raises(ProviderError) as caught:
        await collect(provider, model_request([ChatMessage(role="user", content="hi")]))

    assert caught.value.code == code
    assert f"HTTP {status}" in caught.value.message
    assert len(api.requests) == 1


async def test_a_5xx_without_a_known_error_type_is_a_provider_error_naming_the_status(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    api.responses.append(httpx2.Response(502, text="Bad Gateway"))

    with pytest.raises(ProviderError) as caught:
        await collect(provider, model_request([ChatMessage(role="user", content="hi")]))

    assert caught.value.code == "provider_error"
    assert "HTTP 502" in caught.value.message


async def test_an_overloaded_error_event_inside_the_stream_is_provider_overloaded(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    error_event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api.responses.append(stream_response(message_start(), *text_block(0, ["Hel"])[:2], error_event))

    with pytest.raises(ProviderError) as caught:
        await collect(provider, model_request([ChatMessage(role="user", content="hi")]))

    assert caught.value.code == "provider_overloaded"


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (httpx2.ReadTimeout("timed out"), "provider_timeout"),
        (httpx2.ConnectError("connection refused"), "provider_unavailable"),
    ],
)
async def test_transport_failures_map_to_timeout_and_unavailable(
    api: FakeAnthropicApi, provider: AnthropicProvider, failure: Exception, code: str
) -> None:
    api.responses.append(failure)

    with pytest.raises(ProviderError) as caught:
        await collect(provider, model_request([ChatMessage(role="user", content="hi")]))

    assert caught.value.code == code


async def test_the_api_key_never_appears_in_a_provider_error(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    api.responses.append(error_response(401, "authentication_error", f"invalid x-api-key: {API_KEY}"))

    with pytest.raises(ProviderError) as caught:
        await collect(provider, model_request([ChatMessage(role="user", content="hi")]))

    assert caught.value.code == "provider_auth_failed"
    assert API_KEY not in caught.value.message
    assert API_KEY not in str(caught.value)
    assert "[redacted]" in caught.value.message


async def test_a_tool_name_anthropic_refuses_travels_under_an_alias_and_comes_back_as_ours(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    odd = ToolSpec(name="docs__search.v2", description="Search.", input_schema={"type": "object"})
    api.responses.append(stream_response(message_start(), *text_block(0, ["ok"]), *message_end("end_turn", 1)))
    await collect(provider, model_request([ChatMessage(role="user", content="hi")], tools=[odd]))
    alias = api.body(0)["tools"][0]["name"]
    api.responses.append(
        stream_response(message_start(), *tool_use_block(0, "toolu_9", alias, ["{}"]), *message_end("tool_use", 1))
    )

    _, response = await collect(provider, model_request([ChatMessage(role="user", content="go")], tools=[odd]))

    assert alias != odd.name
    assert api.body(0)["tools"][0]["input_schema"] == {"type": "object", "properties": {}}
    assert response.tool_calls == [ToolCall(id="toolu_9", name=odd.name, arguments={})]
