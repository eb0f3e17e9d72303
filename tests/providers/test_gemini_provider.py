"""The gemini provider against the real `google-genai` SDK, its HTTP mocked with respx.

The SDK is handed the service's `httpx` clients (app/providers/clients.py), which respx intercepts.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx

from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError, ToolCall, ToolSpec
from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from app.providers.gemini_messages import SKIP_SIGNATURE
from app.providers.usage import estimated_usage
from tests.providers.gemini_wire import MODEL, call, chunk, error_body, sse, stream_path, text
from tests.providers.kit import CALCULATOR, ECHO, chat_request, collect, event_stream, sent

BASE_URL = "https://gemini.example.test"
API_KEY = "AIzaSyTEST-0123456789abcdefghijklmnopqrs"
URL = f"{BASE_URL}{stream_path()}"


@pytest.fixture
async def clients() -> AsyncIterator[ProviderClients]:
    clients = ProviderClients({"gemini": ClientOptions(timeout_seconds=5.0, max_retries=0)})
    yield clients
    await clients.aclose()


def request(messages: list[ChatMessage] | None = None, tools: list[ToolSpec] | None = None) -> ModelRequest:
    return chat_request({"provider": "gemini", "name": MODEL}, messages, tools, max_tokens=300)


def stream_reply(chunks: list[dict[str, Any]]) -> httpx.Response:
    return event_stream(sse(chunks))


def gemini(clients: ProviderClients) -> Any:
    return clients.provider(Endpoint("gemini", API_KEY, BASE_URL))


@respx.mock
async def test_text_streams_as_deltas_with_usage_metadata(clients: ProviderClients) -> None:
    route = respx.post(URL).mock(
        return_value=stream_reply(
            [chunk(text("Hel")), chunk(text("lo.")), chunk(text(""), finish="STOP", usage=(12, 3))]
        )
    )

    deltas, response = await collect(gemini(clients), request())

    assert deltas == ["Hel", "lo."]
    assert response == ModelResponse("Hello.", [], input_tokens=12, output_tokens=3, stop_reason="end_turn")
    sent_request = route.calls.last.request
    assert sent_request.headers["x-goog-api-key"] == API_KEY
    assert sent_request.url.params["alt"] == "sse"
    body = sent(route)
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse."}]
    assert body["generationConfig"]["maxOutputTokens"] == 300


@respx.mock
async def test_parallel_function_calls_become_tool_calls_with_ids(clients: ProviderClients) -> None:
    route = respx.post(URL).mock(
        return_value=stream_reply(
            [
                chunk(text("Checking.")),
                chunk(call("calculator", {"expression": "6*7"}, "fc_1"), call("echo", {"text": "hi"})),
                chunk(finish="STOP", usage=(30, 9)),
            ]
        )
    )

    _, response = await collect(gemini(clients), request(tools=[CALCULATOR, ECHO]))

    assert response.stop_reason == "tool_use"
    assert response.tool_calls[0] == ToolCall("fc_1", "calculator", {"expression": "6*7"})
    second = response.tool_calls[1]
    assert (second.name, second.arguments) == ("echo", {"text": "hi"})
    assert second.id.startswith("call_")
    assert second.id != "fc_1"
    declarations = sent(route)["tools"][0]["functionDeclarations"]
    assert declarations[0] == {
        "name": "calculator", "description": "Evaluate arithmetic.", "parameters_json_schema": CALCULATOR.input_schema,
    }  # fmt: skip


@respx.mock
async def test_history_replays_function_calls_with_their_signature_and_responses_by_name(
    clients: ProviderClients,
) -> None:
    signature = base64.b64encode(b"opaque-thought").decode()
    route = respx.post(URL)
    route.mock(return_value=stream_reply([chunk(call("calculator", {"expression": "6*7"}, "fc_1", signature),
                                                finish="STOP")]))  # fmt: skip
    provider = gemini(clients)
    _, first = await collect(provider, request(tools=[CALCULATOR]))

    history = [
        ChatMessage(role="user", content="6*7?"),
        ChatMessage(role="assistant", content="", tool_calls=tuple(first.tool_calls)),
        ChatMessage(role="tool", content="42", tool_call_id="fc_1", name="calculator"),
        ChatMessage(role="assistant", content="", tool_calls=(ToolCall("old", "echo", {"text": "x"}),)),
        ChatMessage(role="tool", content="refused", tool_call_id="old", name="echo", is_error=True),
    ]
    route.mock(return_value=stream_reply([chunk(text("42."), finish="STOP")]))
    await collect(provider, request(history, tools=[CALCULATOR, ECHO]))

    contents = sent(route)["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert contents[1]["parts"] == [{"functionCall": {"id": "fc_1", "name": "calculator",
                                                      "args": {"expression": "6*7"}},
                                     "thoughtSignature": signature}]  # fmt: skip
    assert contents[2]["parts"] == [
        {"functionResponse": {"id": "fc_1", "name": "calculator", "response": {"result": "42"}}}
    ]
    assert contents[3]["parts"][0]["thoughtSignature"] == base64.b64encode(SKIP_SIGNATURE).decode()
    assert contents[4]["parts"][0]["functionResponse"]["response"] == {"error": "refused"}


@respx.mock
async def test_a_stream_without_usage_metadata_is_estimated(clients: ProviderClients) -> None:
    respx.post(URL).mock(return_value=stream_reply([chunk(text("Some answer text.")), chunk(finish="STOP")]))
    req = request()

    _, response = await collect(gemini(clients), req)

    assert (response.input_tokens, response.output_tokens) == estimated_usage(req, "Some answer text.", [], "gemini")


@respx.mock
async def test_max_tokens_and_safety_stops_are_normalised(clients: ProviderClients) -> None:
    route = respx.post(URL)
    route.mock(return_value=stream_reply([chunk(text("cut")), chunk(finish="MAX_TOKENS", usage=(5, 300))]))
    _, cut = await collect(gemini(clients), request())
    route.mock(return_value=stream_reply([chunk(finish="SAFETY", usage=(5, 0))]))
    _, blocked = await collect(gemini(clients), request())

    assert cut.stop_reason == "max_tokens"
    assert blocked.stop_reason == "refusal"


@respx.mock
async def test_thought_parts_are_not_part_of_the_answer(clients: ProviderClients) -> None:
    respx.post(URL).mock(
        return_value=stream_reply([chunk({"text": "pondering", "thought": True}, text("Answer."), finish="STOP")])
    )

    deltas, response = await collect(gemini(clients), request())

    assert deltas == ["Answer."]
    assert response.text == "Answer."


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "provider_auth_failed"),
        (403, "provider_auth_failed"),
        (429, "provider_rate_limited"),
        (500, "provider_error"),
        (503, "provider_overloaded"),
        (529, "provider_overloaded"),
        (400, "provider_bad_request"),
    ],
)
@respx.mock
async def test_http_errors_map_to_the_shared_codes_without_the_key(
    clients: ProviderClients, status: int, code: str
) -> None:
    respx.post(URL).mock(return_value=httpx.Response(status, json=error_body(status, f"nope, key={API_KEY}")))

    with pytest.raises(ProviderError) as caught:
        await collect(gemini(clients), request())

    assert caught.value.code == code
    assert f"HTTP {status}" in caught.value.message
    assert API_KEY not in caught.value.message
    assert API_KEY not in str(caught.value)


@respx.mock
async def test_an_unreachable_server_is_provider_unavailable(clients: ProviderClients) -> None:
    respx.post(URL).mock(side_effect=httpx.ConnectError("refused"))

    with pytest.raises(ProviderError) as caught:
        await collect(gemini(clients), request())

    assert caught.value.code == "provider_unavailable"
