from __future__ import annotations

import pytest

from app.providers.anthropic import AnthropicProvider
from app.providers.base import ProviderError
from app.providers.registry import ProviderRegistry
from app.providers.scripted import ScriptedProvider


def test_the_default_registry_knows_anthropic_and_scripted() -> None:
    anthropic = AnthropicProvider(None)
    registry = ProviderRegistry.default(anthropic)

    assert registry.get("anthropic") is anthropic
    assert isinstance(registry.get("scripted"), ScriptedProvider)
    assert registry.names() == ["anthropic", "scripted"]


def test_an_unknown_provider_is_a_bad_request() -> None:
    with pytest.raises(ProviderError) as caught:
        ProviderRegistry.default(AnthropicProvider(None)).get("openai")

    assert caught.value.code == "provider_bad_request"
    assert "openai" in caught.value.message
