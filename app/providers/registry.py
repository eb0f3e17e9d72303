"""Providers by the name an agent's `model.provider` uses, resolved per turn.

Fixed providers (the scripted one, or fakes in tests) serve every turn. A keyed provider (anthropic,
openai, gemini) is built for each turn from the endpoint its tenant's credentials or the process
environment name; the lookup happens at the turn's first model call, so it costs nothing before
and a deleted or changed credential takes effect on the next turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from app.providers.base import ModelRequest, Provider, ProviderError, ProviderEvent
from app.providers.clients import KEYED_PROVIDERS, Endpoint, ProviderClients
from app.providers.scripted import ScriptedProvider


class EndpointResolver(Protocol):
    async def resolve(self, tenant_id: str, model: Mapping[str, Any], keys: Any = None) -> Endpoint:
        """The endpoint of `model` for `tenant_id`; raises ProviderError `provider_not_configured`.

        `keys`: the tenant's keys as the turn's start already read them (app/credentials/store.py,
        `TenantKeys`), or None to read them now."""
        ...


class ProviderRegistry:
    def __init__(
        self,
        providers: Mapping[str, Provider],
        *,
        clients: ProviderClients | None = None,
        endpoints: EndpointResolver | None = None,
    ) -> None:
        self._providers = dict(providers)
        self._clients = clients
        self._endpoints = endpoints

    @classmethod
    def default(cls, clients: ProviderClients, endpoints: EndpointResolver) -> ProviderRegistry:
        return cls({"scripted": ScriptedProvider()}, clients=clients, endpoints=endpoints)

    def for_turn(self, tenant_id: str, model: Mapping[str, Any], keys: Any = None) -> Provider:
        """The provider one turn calls; a problem surfaces as the ProviderError of its first call.
        `keys`: see `EndpointResolver.resolve`."""
        name = str(model.get("provider"))
        fixed = self._providers.get(name)
        if fixed is not None:
            return fixed
        if name in KEYED_PROVIDERS and self._clients is not None and self._endpoints is not None:
            return _TurnProvider(self._clients, self._endpoints, tenant_id, model, keys)
        if name in KEYED_PROVIDERS:
            return _Unavailable(ProviderError("provider_not_configured", f"the {name} provider is not configured"))
        return _Unavailable(ProviderError("provider_bad_request", f"unknown model provider {name!r}"))

    def available(self, model: Mapping[str, Any]) -> bool:
        """Whether this process can serve `model`'s provider at all (credentials are checked at its call)."""
        name = str(model.get("provider"))
        return name in self._providers or (name in KEYED_PROVIDERS and self._clients is not None)

    def names(self) -> list[str]:
        keyed = KEYED_PROVIDERS if self._clients is not None else ()
        return sorted({*self._providers, *keyed})


class _TurnProvider:
    """Resolves the endpoint at the first call and keeps the provider for the rest of the turn."""

    def __init__(
        self,
        clients: ProviderClients,
        endpoints: EndpointResolver,
        tenant_id: str,
        model: Mapping[str, Any],
        keys: Any = None,
    ) -> None:
        self._clients = clients
        self._endpoints = endpoints
        self._tenant_id = tenant_id
        self._model = model
        self._keys = keys
        self._provider: Provider | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self._provider is None:
            endpoint = await self._endpoints.resolve(self._tenant_id, self._model, self._keys)
            self._provider = self._clients.provider(endpoint)
        async for event in self._provider.stream(request):
            yield event


class _Unavailable:
    def __init__(self, error: ProviderError) -> None:
        self._error = error

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        raise self._error
        yield  # pragma: no cover - makes this an async generator
