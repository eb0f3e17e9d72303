"""What each provider's real SDK sends when a turn has an output schema (the HTTP layer mocked)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest
import respx

from app.providers.anthropic import AnthropicProvider
from app.providers.base import ModelRequest
from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from app.structured.answer import schema_instruction
from tests.providers import gemini_wire, openai_wire
from tests.providers.kit import chat_request, collect, event_stream, sent
from tests.providers.test_anthropic_provider import (
    BASE_URL as ANTHROPIC_URL,
)
from tests.providers.test_anthropic_provider import (
    FakeAnthropicApi,
    message_end,
    message_start,
    stream_response,
    text_block,
)

STRICT = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
LOOSE = {"type": "object", "properties": {"city": {"type": "string"}}}
OPENAI_URL = "https://llm.example.test/v1"
GEMINI_URL = "https://gemini.example.test"


@pytest.fixture
async def clients() -> AsyncIterator[ProviderClients]:
    options = ClientOptions(timeout_seconds=5.0, max_retries=0)
    clients = ProviderClients({"openai": options, "gemini": options})
    yield clients
    await clients.aclose()


def with_schema(model: dict[str, Any], schema: dict[str, Any]) -> ModelRequest:
    return dataclasses.replace(chat_request(model, max_tokens=100), output_schema=schema)


@pytest.mark.parametrize(("schema", "strict"), [(STRICT, True), (LOOSE, False)])
@respx.mock
async def test_openai_gets_a_json_schema_response_format_strict_where_the_schema_allows_it(
    clients: ProviderClients, schema: dict[str, Any], strict: bool
) -> None:
    route = respx.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=event_stream(
            openai_wire.sse([*openai_wire.text_chunks('{"city": "Oslo"}'), openai_wire.chunk(finish="stop")])
        )
    )
    provider = clients.provider(Endpoint("openai", "sk-test-0123456789", OPENAI_URL))

    _, response = await collect(provider, with_schema({"provider": "openai", "name": "gpt-4o-mini"}, schema))

    assert response.text == '{"city": "Oslo"}'
    assert sent(route)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": strict},
    }


@respx.mock
async def test_gemini_gets_a_json_response_schema(clients: ProviderClients) -> None:
    route = respx.post(f"{GEMINI_URL}{gemini_wire.stream_path()}").mock(
        return_value=event_stream(
            gemini_wire.sse([gemini_wire.chunk(gemini_wire.text('{"city": "Oslo"}'), finish="STOP")])
        )
    )
    provider = clients.provider(Endpoint("gemini", "AIzaTEST-0123456789", GEMINI_URL))

    await collect(provider, with_schema({"provider": "gemini", "name": gemini_wire.MODEL}, LOOSE))

    config = sent(route)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == LOOSE


@respx.mock
async def test_no_schema_sends_no_response_format(clients: ProviderClients) -> None:
    route = respx.post(f"{OPENAI_URL}/chat/completions").mock(
        return_value=event_stream(openai_wire.sse([*openai_wire.text_chunks("hi"), openai_wire.chunk(finish="stop")]))
    )
    provider = clients.provider(Endpoint("openai", "sk-test-0123456789", OPENAI_URL))
    await collect(provider, chat_request({"provider": "openai", "name": "gpt-4o-mini"}, max_tokens=10))
    assert "response_format" not in sent(route)


@pytest.fixture
async def anthropic_api() -> AsyncIterator[tuple[FakeAnthropicApi, AnthropicProvider]]:
    api = FakeAnthropicApi()
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test", base_url=ANTHROPIC_URL, max_retries=0, http_client=http
        )
        yield api, AnthropicProvider(client)


async def test_anthropic_gets_structured_outputs_for_a_schema_they_take_and_the_schema_in_words_otherwise(
    anthropic_api: tuple[FakeAnthropicApi, AnthropicProvider],
) -> None:
    api, provider = anthropic_api
    for _ in range(2):
        api.responses.append(
            stream_response(message_start(), *text_block(0, ['{"city": "Oslo"}']), *message_end("end_turn", 5))
        )
    model = {"provider": "anthropic", "name": "claude-sonnet-4-5"}

    await collect(provider, with_schema(model, STRICT))
    await collect(provider, with_schema(model, LOOSE))

    strict, loose = api.body(0), api.body(1)
    assert strict["output_config"] == {"format": {"type": "json_schema", "schema": STRICT}}
    assert strict["system"] == "You are terse."
    assert "output_config" not in loose
    assert loose["system"] == f"You are terse.\n\n{schema_instruction(LOOSE)}"
    assert loose["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
