from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import pytest
import respx

from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError
from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from app.providers.registry import ProviderRegistry
from app.providers.scripted import ScriptedProvider
from tests.providers.openai_wire import chunk, sse, text_chunks


class CountingResolver:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def resolve(self, tenant_id: str, model: Mapping[str, Any], keys: Any = None) -> Endpoint:
        self.calls.append((tenant_id, dict(model)))
        return self.endpoint


def request(model: dict[str, Any]) -> ModelRequest:
    return ModelRequest(model=model, system="", messages=[ChatMessage(role="user", content="hi")], tools=[],
                        max_tokens=10)  # fmt: skip


async def final(provider: Any, req: ModelRequest) -> ModelResponse:
    items = [item async for item in provider.stream(req)]
    assert isinstance(items[-1], ModelResponse)
    return items[-1]


def test_scripted_is_served_to_every_turn_and_keyed_providers_are_known() -> None:
    clients = ProviderClients({})
    registry = ProviderRegistry.default(clients, CountingResolver(Endpoint("openai", "k")))

    assert isinstance(registry.for_turn("t1", {"provider": "scripted"}), ScriptedProvider)
    assert registry.names() == ["anthropic", "gemini", "openai", "scripted"]


async def test_an_unknown_provider_fails_the_call_as_a_bad_request() -> None:
    registry = ProviderRegistry({"scripted": ScriptedProvider()})

    with pytest.raises(ProviderError) as caught:
        await final(registry.for_turn("t1", {"provider": "mistral"}), request({"provider": "mistral"}))

    assert caught.value.code == "provider_bad_request"


async def test_a_keyed_provider_without_clients_is_not_configured() -> None:
    registry = ProviderRegistry({"scripted": ScriptedProvider()})

    with pytest.raises(ProviderError) as caught:
        await final(registry.for_turn("t1", {"provider": "openai"}), request({"provider": "openai"}))

    assert caught.value.code == "provider_not_configured"


@respx.mock
async def test_the_endpoint_is_resolved_once_per_turn_at_its_first_call() -> None:
    base = "https://compat.example.test/v1"
    route = respx.post(f"{base}/chat/completions").mock(
        return_value=httpx.Response(200, content=sse([*text_chunks("ok"), chunk(finish="stop")]))
    )
    resolver = CountingResolver(Endpoint("openai", "sk-tenant-key-0123456789abcdef", base))
    clients = ProviderClients({"openai": ClientOptions(5.0, 0)})
    registry = ProviderRegistry.default(clients, resolver)
    model = {"provider": "openai", "name": "llama3"}

    provider = registry.for_turn("tenant-a", model)
    assert resolver.calls == []
    await final(provider, request(model))
    await final(provider, request(model))
    await final(registry.for_turn("tenant-a", model), request(model))

    assert resolver.calls == [("tenant-a", model), ("tenant-a", model)]
    assert route.call_count == 3
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-tenant-key-0123456789abcdef"
    await clients.aclose()
