"""Every provider's stream passes the same output guard: the real Anthropic SDK and its SSE parsing,
a secret split across its text deltas, and no delta the journal keeps holds a byte of it."""

from __future__ import annotations

from app.providers.anthropic import AnthropicProvider
from app.providers.base import ChatMessage
from tests.providers.guarded import CHUNKS, guarded_reply
from tests.providers.test_anthropic_provider import (
    FakeAnthropicApi,
    api,
    message_end,
    message_start,
    model_request,
    provider,
    stream_response,
    text_block,
)

__all__ = ["api", "provider"]


async def test_an_anthropic_stream_is_guarded_like_any_other(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    api.responses.append(stream_response(message_start(), *text_block(0, CHUNKS), *message_end("end_turn", 9)))
    await guarded_reply(provider, model_request([ChatMessage(role="user", content="how do I sign in?")]))
