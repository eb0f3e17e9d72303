"""Providers by the name an agent's `model.provider` uses."""

from __future__ import annotations

from collections.abc import Mapping

from app.providers.anthropic import AnthropicProvider
from app.providers.base import Provider, ProviderError
from app.providers.scripted import ScriptedProvider


class ProviderRegistry:
    def __init__(self, providers: Mapping[str, Provider]) -> None:
        self._providers = dict(providers)

    @classmethod
    def default(cls, anthropic: AnthropicProvider) -> ProviderRegistry:
        return cls({"anthropic": anthropic, "scripted": ScriptedProvider()})

    def get(self, name: str) -> Provider:
        provider = self._providers.get(name)
        if provider is None:
            known = ", ".join(sorted(self._providers))
            raise ProviderError("provider_bad_request", f"unknown model provider {name!r} (known: {known})")
        return provider

    def names(self) -> list[str]:
        return sorted(self._providers)
