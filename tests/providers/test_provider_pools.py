"""The provider connection pools (PROVIDER_MAX_CONNECTIONS) and a stream that stalls half-way, against a
loopback HTTP server and the real SDKs: the limit bounds the connections the server sees, a limit above
one shard is split over pools that turns take in turn, and a read timeout in the middle of a reply is a
provider error (`provider_timeout`), in the provider and in the turn's `turn.ended`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.providers import clients as clients_module
from app.providers.base import ProviderError
from app.providers.clients import ClientOptions, Endpoint, ProviderClients, shard_limits
from app.settings import AnthropicSettings, ProviderSettings
from tests.approvals.helpers import ended
from tests.conftest import TokenFactory, make_settings, running_app
from tests.providers import openai_wire
from tests.providers.kit import chat_request, collect
from tests.sse import read_turn

ANTHROPIC_MODEL = {"provider": "anthropic", "name": "claude-sonnet-4-5"}


def _frame(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def anthropic_head() -> bytes:
    message = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1},
    }  # fmt: skip
    return b"".join(
        _frame(e)
        for e in (
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        )
    )


def anthropic_tail() -> bytes:
    return b"".join(
        _frame(e)
        for e in (
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 2}},
            {"type": "message_stop"},
        )
    )  # fmt: skip


@dataclass
class StallingServer:
    """Answers every POST with `head`, then holds the connection until `release` is set (then `tail`,
    and closes). Counts the connections open at once."""

    head: bytes
    tail: bytes
    release: asyncio.Event = field(default_factory=asyncio.Event)
    open_now: int = 0
    most_open: int = 0
    requests: int = 0
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            headers = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
            length = next(
                (int(line.split(":", 1)[1]) for line in headers.split("\r\n") if line.startswith("content-length:")),
                0,
            )
            await reader.readexactly(length)
            self.requests += 1
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + self.head)
            await writer.drain()
            await self.release.wait()
            writer.write(self.tail)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@asynccontextmanager
async def stalling_server(head: bytes, tail: bytes = b"") -> AsyncIterator[StallingServer]:
    server = StallingServer(head, tail)
    tcp = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{tcp.sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        server.release.set()
        tcp.close()
        await tcp.wait_closed()


async def _until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def test_the_limit_is_split_into_shards_of_at_most_500() -> None:
    assert shard_limits(1) == [1]
    assert shard_limits(500) == [500]
    assert shard_limits(501) == [251, 250]
    assert shard_limits(10_000) == [500] * 20


def test_provider_max_connections_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ProviderSettings().max_connections == 500
    monkeypatch.setenv("PROVIDER_MAX_CONNECTIONS", "12000")
    assert ProviderSettings().max_connections == 12_000


async def test_the_limit_bounds_the_connections_a_provider_sees() -> None:
    async with stalling_server(anthropic_head(), anthropic_tail()) as server:
        clients = ProviderClients({"anthropic": ClientOptions(5.0, 0)}, max_connections=2)
        try:
            endpoint = Endpoint("anthropic", "sk-ant-test", server.url)
            request = chat_request(ANTHROPIC_MODEL, max_tokens=64)
            calls = [asyncio.create_task(collect(clients.provider(endpoint), request)) for _ in range(3)]
            await _until(lambda: server.requests == 2)
            await asyncio.sleep(0.3)
            assert (server.open_now, server.requests) == (2, 2), "a third call got past a limit of 2"
            server.release.set()
            replies = await asyncio.gather(*calls)
        finally:
            await clients.aclose()
    assert [response.text for _, response in replies] == ["Hello"] * 3
    assert server.most_open == 2


async def test_turns_take_the_shards_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clients_module, "SHARD_CONNECTIONS", 1)
    async with stalling_server(anthropic_head(), anthropic_tail()) as server:
        clients = ProviderClients({"anthropic": ClientOptions(5.0, 0)}, max_connections=2)
        try:
            assert clients.shards == 2
            endpoint = Endpoint("anthropic", "sk-ant-test", server.url)
            request = chat_request(ANTHROPIC_MODEL, max_tokens=64)
            calls = [asyncio.create_task(collect(clients.provider(endpoint), request)) for _ in range(2)]
            # Each shard holds one connection: both calls are open at once only on different shards.
            await _until(lambda: server.open_now == 2)
            server.release.set()
            replies = await asyncio.gather(*calls)
        finally:
            await clients.aclose()
    assert [response.text for _, response in replies] == ["Hello"] * 2


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_a_read_timeout_in_the_middle_of_a_reply_is_provider_timeout(provider: str) -> None:
    if provider == "anthropic":
        head, model = anthropic_head(), ANTHROPIC_MODEL
    else:
        head = openai_wire.sse(openai_wire.text_chunks("Hel")).split(b"data: [DONE]")[0]
        model = {"provider": "openai", "name": openai_wire.MODEL}
    async with stalling_server(head) as server:
        clients = ProviderClients({provider: ClientOptions(timeout_seconds=0.5, max_retries=0)})
        try:
            base_url = server.url if provider == "anthropic" else f"{server.url}/v1"
            stream = clients.provider(Endpoint(provider, "sk-test-0123456789abcdefgh", base_url))
            with pytest.raises(ProviderError) as caught:
                await collect(stream, chat_request(model, max_tokens=64))
        finally:
            await clients.aclose()
    assert caught.value.code == "provider_timeout"


async def test_a_turn_whose_provider_stalls_ends_with_provider_timeout(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    async with stalling_server(anthropic_head()) as server:
        settings = make_settings(
            database_url,
            tmp_path,
            anthropic=AnthropicSettings(api_key="sk-ant-operator", base_url=server.url, timeout_seconds=0.5,
                                        max_retries=0),
        )  # fmt: skip
        async with running_app(settings) as (_, client):
            admin = auth_headers(tenant, "root", roles=["admin"])
            config = {"model": {**ANTHROPIC_MODEL, "max_tokens": 64}}
            agent = (await client.post("/agents", json={"name": "stall", "config": config}, headers=admin)).json()
            session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=admin)).json()
            frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"},
                                     headers=admin)  # fmt: skip
    end = ended(frames)
    assert end["status"] == "failed", end
    assert end["error"]["code"] == "provider_timeout", end
