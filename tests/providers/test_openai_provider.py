"""The openai provider against the real `openai` SDK, its HTTP mocked with respx.

The SDK sends through the service's own `httpx.AsyncClient` (app/providers/clients.py), which respx
intercepts: every request goes through the SDK's real serialisation, SSE parsing and error mapping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx

from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError, ToolCall, ToolSpec
from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from app.providers.usage import estimated_usage
from tests.providers.kit import CALCULATOR, ECHO, chat_request, event_stream, sent
from tests.providers.kit import collect as collect_stream
from tests.providers.openai_wire import (
    MODEL,
    chunk,
    error_body,
    sse,
    text_chunks,
    tool_fragment,
    usage_chunk,
)

BASE_URL = "https://llm.example.test/v1"
API_KEY = "sk-proj-TEST-0123456789abcdefSECRET"


@pytest.fixture
async def clients() -> AsyncIterator[ProviderClients]:
    clients = ProviderClients({"openai": ClientOptions(timeout_seconds=5.0, max_retries=0)})
    yield clients
    await clients.aclose()


def request(messages: list[ChatMessage] | None = None, tools: list[ToolSpec] | None = None) -> ModelRequest:
    return chat_request({"provider": "openai", "name": MODEL}, messages, tools, max_tokens=256)


def stream_reply(chunks: list[dict[str, Any]]) -> httpx.Response:
    return event_stream(sse(chunks))


async def collect(clients: ProviderClients, req: ModelRequest, *, base_url: str | None = BASE_URL,
                  ) -> tuple[list[str], ModelResponse]:  # fmt: skip
    return await collect_stream(clients.provider(Endpoint("openai", API_KEY, base_url)), req)


@respx.mock
async def test_text_streams_as_deltas_and_usage_comes_from_the_final_chunk(clients: ProviderClients) -> None:
    route = respx.post(f"{BASE_URL}/chat/completions").mock(
        return_value=stream_reply([*text_chunks("Hel", "lo, ", "world."), chunk(finish="stop"), usage_chunk(17, 4)])
    )

    deltas, response = await collect(clients, request())

    assert deltas == ["Hel", "lo, ", "world."]
    assert response == ModelResponse("Hello, world.", [], input_tokens=17, output_tokens=4, stop_reason="end_turn")
    body = sent(route)
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 256
    assert "max_completion_tokens" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert route.calls.last.request.headers["authorization"] == f"Bearer {API_KEY}"


@respx.mock
async def test_tool_arguments_in_fragments_and_parallel_calls_are_joined_by_index(clients: ProviderClients) -> None:
    chunks = [
        *text_chunks("Checking."),
        tool_fragment(0, call_id="call_a", name="calculator"),
        tool_fragment(1, call_id="call_b", name="echo"),
        tool_fragment(0, args='{"expre'),
        tool_fragment(1, args='{"text": "he'),
        tool_fragment(0, args='ssion": "6*'),
        tool_fragment(1, args='llo"}'),
        tool_fragment(0, args='7"}'),
        chunk(finish="tool_calls"),
        usage_chunk(40, 22),
    ]
    route = respx.post(f"{BASE_URL}/chat/completions").mock(return_value=stream_reply(chunks))

    _, response = await collect(clients, request(tools=[CALCULATOR, ECHO]))

    assert response.tool_calls == [
        ToolCall("call_a", "calculator", {"expression": "6*7"}),
        ToolCall("call_b", "echo", {"text": "hello"}),
    ]
    assert response.stop_reason == "tool_use"
    assert (response.text, response.input_tokens, response.output_tokens) == ("Checking.", 40, 22)
    tools = sent(route)["tools"]
    assert [t["function"]["name"] for t in tools] == ["calculator", "echo"]
    assert tools[0] == {"type": "function", "function": {
        "name": "calculator", "description": "Evaluate arithmetic.",
        "parameters": CALCULATOR.input_schema}}  # fmt: skip


@respx.mock
async def test_a_server_that_says_stop_with_tool_calls_still_reports_tool_use(clients: ProviderClients) -> None:
    chunks = [tool_fragment(0, call_id="c1", name="echo", args='{"text": "x"}'), chunk(finish="stop")]
    respx.post(f"{BASE_URL}/chat/completions").mock(return_value=stream_reply(chunks))

    _, response = await collect(clients, request(tools=[ECHO]))

    assert response.stop_reason == "tool_use"
    assert response.tool_calls == [ToolCall("c1", "echo", {"text": "x"})]


@respx.mock
async def test_a_stream_without_usage_is_counted_with_the_documented_estimate(clients: ProviderClients) -> None:
    respx.post(f"{BASE_URL}/chat/completions").mock(
        return_value=stream_reply([*text_chunks("Twelve characters", " of text."), chunk(finish="stop")])
    )
    req = request(tools=[CALCULATOR])

    _, response = await collect(clients, req)

    expected = estimated_usage(req, "Twelve characters of text.", [], "openai")
    assert (response.input_tokens, response.output_tokens) == expected
    assert response.input_tokens > 0
    assert response.output_tokens > 0


@respx.mock
async def test_finish_reason_length_is_max_tokens_and_drops_a_call_cut_mid_arguments(
    clients: ProviderClients,
) -> None:
    chunks = [
        tool_fragment(0, call_id="c1", name="echo", args='{"text": "done"}'),
        tool_fragment(1, call_id="c2", name="calculator", args='{"expression": "1+'),
        chunk(finish="length"),
        usage_chunk(10, 256),
    ]
    respx.post(f"{BASE_URL}/chat/completions").mock(return_value=stream_reply(chunks))

    _, response = await collect(clients, request(tools=[CALCULATOR, ECHO]))

    assert response.stop_reason == "max_tokens"
    assert response.tool_calls == [ToolCall("c1", "echo", {"text": "done"})]


@respx.mock
async def test_invalid_arguments_without_a_length_stop_fail_the_call(clients: ProviderClients) -> None:
    chunks = [tool_fragment(0, call_id="c1", name="echo", args='{"text": '), chunk(finish="tool_calls")]
    respx.post(f"{BASE_URL}/chat/completions").mock(return_value=stream_reply(chunks))

    with pytest.raises(ProviderError) as caught:
        await collect(clients, request(tools=[ECHO]))

    assert caught.value.code == "provider_error"
    assert "invalid JSON" in caught.value.message


@respx.mock
async def test_history_with_tool_calls_and_results_is_sent_in_chat_completions_shape(
    clients: ProviderClients,
) -> None:
    route = respx.post(f"{BASE_URL}/chat/completions").mock(
        return_value=stream_reply([*text_chunks("42."), chunk(finish="stop")])
    )
    history = [
        ChatMessage(role="user", content="6*7 and echo?"),
        ChatMessage(
            role="assistant",
            content="",
            tool_calls=(ToolCall("c1", "calculator", {"expression": "6*7"}), ToolCall("c2", "echo", {"text": "a"})),
        ),
        ChatMessage(role="tool", content="42", tool_call_id="c1", name="calculator"),
        ChatMessage(role="tool", content="denied by a human", tool_call_id="c2", name="echo", is_error=True),
    ]

    await collect(clients, request(history, tools=[CALCULATOR, ECHO]))

    assert sent(route)["messages"][1:] == [
        {"role": "user", "content": "6*7 and echo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "6*7"}'}},
            {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": '{"text": "a"}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "tool", "tool_call_id": "c2", "content": "error: denied by a human"},
    ]  # fmt: skip


@respx.mock
async def test_a_tool_name_openai_refuses_travels_under_an_alias_and_comes_back_as_ours(
    clients: ProviderClients,
) -> None:
    odd = ToolSpec("files__read.v2/beta", "Read a file.", {"type": "object", "properties": {}})
    route = respx.post(f"{BASE_URL}/chat/completions")
    route.mock(return_value=stream_reply([chunk(finish="stop")]))
    await collect(clients, request(tools=[odd]))
    alias = sent(route)["tools"][0]["function"]["name"]
    assert alias != odd.name
    assert all(c.isalnum() or c in "_-" for c in alias)

    calls = [tool_fragment(0, call_id="c9", name=alias, args="{}"), chunk(finish="tool_calls")]
    route.mock(return_value=stream_reply(calls))
    _, response = await collect(clients, request(tools=[odd]))

    assert response.tool_calls == [ToolCall("c9", odd.name, {})]


@respx.mock
async def test_the_official_api_gets_max_completion_tokens(clients: ProviderClients) -> None:
    route = respx.post("https://api.openai.com/v1/chat/completions").mock(
        return_value=stream_reply([*text_chunks("ok"), chunk(finish="stop")])
    )

    await collect(clients, request(), base_url=None)

    body = sent(route)
    assert body["max_completion_tokens"] == 256
    assert "max_tokens" not in body


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "provider_auth_failed"),
        (429, "provider_rate_limited"),
        (500, "provider_error"),
        (529, "provider_overloaded"),
        (400, "provider_bad_request"),
    ],
)
@respx.mock
async def test_http_errors_map_to_the_shared_codes_without_the_key(
    clients: ProviderClients, status: int, code: str
) -> None:
    respx.post(f"{BASE_URL}/chat/completions").mock(
        return_value=httpx.Response(status, json=error_body(status, f"bad things; key was {API_KEY}"))
    )

    with pytest.raises(ProviderError) as caught:
        await collect(clients, request())

    assert caught.value.code == code
    assert f"HTTP {status}" in caught.value.message
    assert API_KEY not in caught.value.message
    assert API_KEY not in str(caught.value)
    assert "[redacted]" in caught.value.message


@respx.mock
async def test_an_error_object_inside_the_stream_is_a_provider_error(clients: ProviderClients) -> None:
    body = b'data: {"error": {"message": "model crashed", "type": "server_error"}}\n\n'
    respx.post(f"{BASE_URL}/chat/completions").mock(
        return_value=httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )

    with pytest.raises(ProviderError) as caught:
        await collect(clients, request())

    assert caught.value.code == "provider_error"
    assert "model crashed" in caught.value.message


@respx.mock
async def test_an_unreachable_server_is_provider_unavailable(clients: ProviderClients) -> None:
    respx.post(f"{BASE_URL}/chat/completions").mock(side_effect=httpx.ConnectError("refused"))

    with pytest.raises(ProviderError) as caught:
        await collect(clients, request())

    assert caught.value.code == "provider_unavailable"
