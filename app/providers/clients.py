"""SDK clients per endpoint (provider, key, base URL), built once and reused across turns.

The OpenAI and Gemini SDKs send through the service's own `httpx` pools for LLM traffic, the Anthropic
SDK through `httpx2` pools. `max_connections` (PROVIDER_MAX_CONNECTIONS) bounds the connections open to
providers at once; one pool of an `httpx` client gets slow beyond a few hundred connections (each
request scans the pool), so the limit is split into shards of at most 500, one pool pair each, and each
turn's provider takes the next shard in turn. A client is cheap once its pool exists; the small cache
saves rebuilding it per turn.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

import anthropic
import httpx
import httpx2
import openai
from google import genai
from google.genai import types

from app.providers.anthropic import AnthropicProvider
from app.providers.base import Provider, ProviderError
from app.providers.gemini import GeminiProvider
from app.providers.openai import OpenAIProvider

KEYED_PROVIDERS = ("anthropic", "openai", "gemini")
_CACHE_SIZE = 256
SHARD_CONNECTIONS = 500
"""The most connections one pool holds; a larger PROVIDER_MAX_CONNECTIONS is split over more pools."""
_KEEPALIVE = 100


def shard_limits(max_connections: int) -> list[int]:
    """Each shard's connection limit: `ceil(max_connections / 500)` pools sharing the limit evenly."""
    count = max(1, math.ceil(max_connections / SHARD_CONNECTIONS))
    base, extra = divmod(max(max_connections, count), count)
    return [base + (1 if i < extra else 0) for i in range(count)]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one turn's model calls go; `api_key` never appears in a repr (or a log line)."""

    provider: str
    api_key: str = field(repr=False)
    base_url: str | None = None
    source: str = "environment"
    """`credential:<name>` or `environment`: which rule of the resolution order picked it."""


@dataclass(frozen=True, slots=True)
class ClientOptions:
    timeout_seconds: float = 120.0
    max_retries: int = 2


class ProviderClients:
    def __init__(self, options: Mapping[str, ClientOptions], *, max_connections: int = 500) -> None:
        self._options = dict(options)
        limits = shard_limits(max_connections)
        self._http = [
            httpx.AsyncClient(
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=min(n, _KEEPALIVE)), timeout=None
            )
            for n in limits
        ]
        self._http2 = [
            httpx2.AsyncClient(
                limits=httpx2.Limits(max_connections=n, max_keepalive_connections=min(n, _KEEPALIVE)), timeout=None
            )
            for n in limits
        ]
        self._sync_http = httpx.Client()
        self._next_shard = itertools.count()
        self._cache: OrderedDict[tuple[str, str, str | None, int], object] = OrderedDict()

    @property
    def shards(self) -> int:
        return len(self._http)

    def provider(self, endpoint: Endpoint) -> Provider:
        """A provider for one turn that sends to `endpoint`."""
        client = self._client(endpoint)
        if isinstance(client, openai.AsyncOpenAI):
            return OpenAIProvider(client)
        if isinstance(client, genai.Client):
            return GeminiProvider(client, api_key=endpoint.api_key)
        assert isinstance(client, anthropic.AsyncAnthropic)
        return AnthropicProvider(client)

    def _client(self, endpoint: Endpoint) -> object:
        shard = next(self._next_shard) % len(self._http)
        key = (endpoint.provider, endpoint.api_key, endpoint.base_url, shard)
        client = self._cache.get(key)
        if client is None:
            client = self._build(endpoint, shard)
            self._cache[key] = client
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return client

    def _build(self, endpoint: Endpoint, shard: int = 0) -> object:
        options = self._options.get(endpoint.provider, ClientOptions())
        if endpoint.provider == "openai":
            return openai.AsyncOpenAI(
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                timeout=options.timeout_seconds,
                max_retries=options.max_retries,
                # The SDK's hint names httpx2 only, but it takes an `httpx.AsyncClient` as well
                # (`openai._httpx2.is_legacy_httpx_async_client`).
                http_client=self._http[shard],  # type: ignore[arg-type]
            )
        if endpoint.provider == "gemini":
            http_options = types.HttpOptions(
                base_url=endpoint.base_url,
                timeout=int(options.timeout_seconds * 1000),
                retry_options=types.HttpRetryOptions(attempts=options.max_retries + 1),
                httpx_client=self._sync_http,
                httpx_async_client=self._http[shard],
            )
            return genai.Client(api_key=endpoint.api_key, vertexai=False, http_options=http_options)
        if endpoint.provider == "anthropic":
            return anthropic.AsyncAnthropic(
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                timeout=options.timeout_seconds,
                max_retries=options.max_retries,
                http_client=self._http2[shard],
            )
        raise ProviderError("provider_bad_request", f"unknown model provider {endpoint.provider!r}")

    async def aclose(self) -> None:
        self._cache.clear()
        for client in self._http:
            await client.aclose()
        for client2 in self._http2:
            await client2.aclose()
        self._sync_http.close()
