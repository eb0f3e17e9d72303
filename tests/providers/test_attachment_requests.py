"""What each provider's real SDK sends for a user message with an image, a PDF and a text file."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest
import respx

from app.providers.anthropic import AnthropicProvider
from app.providers.base import Attachment, ChatMessage, ModelRequest
from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from tests.providers import gemini_wire, openai_wire
from tests.providers.kit import chat_request, collect, event_stream, sent
from tests.providers.test_anthropic_provider import BASE_URL as ANTHROPIC_URL
from tests.providers.test_anthropic_provider import (
    FakeAnthropicApi,
    message_end,
    message_start,
    stream_response,
    text_block,
)

PNG = b"\x89PNG\r\n\x1a\nIMAGE"
PDF = b"%PDF-1.7 DOC"
IMAGE = Attachment("f-image", "image", "shot.png", "image/png", len(PNG))
PAPER = Attachment("f-pdf", "pdf", "paper.pdf", "application/pdf", len(PDF))
NOTES = Attachment("f-text", "text", "notes.csv", "text/csv", 8)
GONE = Attachment("f-gone", "image", "old.png", "image/png", 10)
FILES = {"f-image": PNG, "f-pdf": PDF, "f-text": b"a,b\n1,2\n"}
NOTES_TEXT = "[attached file 'notes.csv' (text/csv)]\na,b\n1,2\n"
GONE_TEXT = "[the attached file 'old.png' is no longer available]"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def with_files(model: dict[str, Any]) -> ModelRequest:
    message = ChatMessage(role="user", content="What is in these?", attachments=(IMAGE, PAPER, NOTES, GONE))
    return dataclasses.replace(chat_request(model, [message], max_tokens=100), files=FILES)


@pytest.fixture
async def clients() -> AsyncIterator[ProviderClients]:
    options = ClientOptions(timeout_seconds=5.0, max_retries=0)
    clients = ProviderClients({"openai": options, "gemini": options})
    yield clients
    await clients.aclose()


@respx.mock
async def test_openai_gets_an_image_url_a_file_part_and_the_text_file_inlined(clients: ProviderClients) -> None:
    route = respx.post("https://llm.example.test/v1/chat/completions").mock(
        return_value=event_stream(openai_wire.sse([*openai_wire.text_chunks("ok"), openai_wire.chunk(finish="stop")]))
    )
    provider = clients.provider(Endpoint("openai", "sk-test-0123456789", "https://llm.example.test/v1"))

    await collect(provider, with_files({"provider": "openai", "name": "gpt-4o-mini"}))

    assert sent(route)["messages"][1] == {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
            {"type": "file", "file": {"filename": "paper.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"}},
            {"type": "text", "text": NOTES_TEXT},
            {"type": "text", "text": GONE_TEXT},
            {"type": "text", "text": "What is in these?"},
        ],
    }


@respx.mock
async def test_gemini_gets_inline_data_and_the_text_file_inlined(clients: ProviderClients) -> None:
    route = respx.post(f"https://gemini.example.test{gemini_wire.stream_path()}").mock(
        return_value=event_stream(gemini_wire.sse([gemini_wire.chunk(gemini_wire.text("ok"), finish="STOP")]))
    )
    provider = clients.provider(Endpoint("gemini", "AIzaTEST-0123456789", "https://gemini.example.test"))

    await collect(provider, with_files({"provider": "gemini", "name": gemini_wire.MODEL}))

    assert sent(route)["contents"] == [
        {
            "role": "user",
            "parts": [
                {"inlineData": {"mime_type": "image/png", "data": b64(PNG)}},
                {"inlineData": {"mime_type": "application/pdf", "data": b64(PDF)}},
                {"text": NOTES_TEXT},
                {"text": GONE_TEXT},
                {"text": "What is in these?"},
            ],
        }
    ]


async def test_anthropic_gets_image_and_document_blocks_and_the_text_file_inlined() -> None:
    api = FakeAnthropicApi()
    api.responses.append(stream_response(message_start(), *text_block(0, ["ok"]), *message_end("end_turn", 1)))
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test", base_url=ANTHROPIC_URL, max_retries=0, http_client=http
        )
        await collect(AnthropicProvider(client), with_files({"provider": "anthropic", "name": "claude-sonnet-4-5"}))

    assert api.body(0)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)}},
                {"type": "text", "text": NOTES_TEXT},
                {"type": "text", "text": GONE_TEXT},
                {"type": "text", "text": "What is in these?"},
            ],
        }
    ]
