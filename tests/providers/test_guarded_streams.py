"""The OpenAI and Gemini streams pass the same output guard as Anthropic's: each real SDK parses a reply
whose secret is split across its deltas (HTTP mocked with respx), and nothing kept holds a byte of it."""

from __future__ import annotations

import respx

from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from tests.providers import gemini_wire, openai_wire
from tests.providers.guarded import CHUNKS, guarded_reply
from tests.providers.kit import chat_request, event_stream

OPENAI_URL = "https://llm.example.test/v1"
GEMINI_URL = "https://gemini.example.test"


@respx.mock
async def test_an_openai_stream_is_guarded_like_any_other() -> None:
    chunks = [*openai_wire.text_chunks(*CHUNKS), openai_wire.chunk(finish="stop"), openai_wire.usage_chunk(9, 9)]
    respx.post(f"{OPENAI_URL}/chat/completions").mock(return_value=event_stream(openai_wire.sse(chunks)))
    clients = ProviderClients({"openai": ClientOptions(timeout_seconds=5.0, max_retries=0)})
    try:
        provider = clients.provider(Endpoint("openai", "sk-test", OPENAI_URL))
        await guarded_reply(provider, chat_request({"provider": "openai", "name": openai_wire.MODEL}, max_tokens=256))
    finally:
        await clients.aclose()


@respx.mock
async def test_a_gemini_stream_is_guarded_like_any_other() -> None:
    parts = [gemini_wire.chunk(gemini_wire.text(part)) for part in CHUNKS]
    chunks = [*parts, gemini_wire.chunk(gemini_wire.text(""), finish="STOP", usage=(9, 9))]
    respx.post(f"{GEMINI_URL}{gemini_wire.stream_path()}").mock(return_value=event_stream(gemini_wire.sse(chunks)))
    clients = ProviderClients({"gemini": ClientOptions(timeout_seconds=5.0, max_retries=0)})
    try:
        provider = clients.provider(Endpoint("gemini", "AIza-test", GEMINI_URL))
        await guarded_reply(provider, chat_request({"provider": "gemini", "name": gemini_wire.MODEL}, max_tokens=256))
    finally:
        await clients.aclose()
