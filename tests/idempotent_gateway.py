"""A recording MCP gateway that keeps the gateway's side of the idempotency contract, for crash tests.

The service sends every `tools/call` with `X-Idempotency-Key` and may re-send a call whose outcome it
never stored (a replica died while the call was out). A gateway deduplicates on the key: the effect
happens once, and a repeated key gets the stored result — also while the first request is still
running, which then finishes even if its caller went away (the effect runs in a task of its own).

`Gateway.requests` (tests/mcp_server.py) records every request with its key; `Gateway.calls` records
each *effect* once, as (title, key). A test can hold a title's effect until it releases it, and
wait until a request for that title has reached the server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mcp.server.mcpserver import Context, MCPServer

from tests.mcp_server import Gateway, serve_gateway

TOOL = "github__create_issue"
POLL_SECONDS = 0.02


@dataclass
class Hold:
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)


class Effects:
    """One effect per idempotency key; the server thread's loop runs it, the test thread reads it."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._holds: dict[str, Hold] = {}
        self._results: dict[str, str] = {}
        self._running: dict[str, asyncio.Task[str]] = {}

    def hold(self, title: str) -> Hold:
        """From now on, the effect for `title` waits until `release(title)`."""
        self._holds[title] = Hold()
        return self._holds[title]

    def release(self, title: str) -> None:
        self._holds[title].released.set()

    def reset(self) -> None:
        for hold in self._holds.values():
            hold.released.set()
        self._holds.clear()
        self._gateway.clear()

    def per_key(self) -> Counter[str | None]:
        """How many times the effect of each key happened (the contract: never more than once)."""
        return Counter(key for _, key in self._gateway.calls)

    def sent(self, key: str) -> int:
        """How many `tools/call` requests carried `key`."""
        return sum(1 for seen in self._gateway.rpc("tools/call") if seen.idempotency_key == key)

    async def perform(self, title: str, key: str | None) -> str:
        if key is None:
            raise ValueError("tools/call without X-Idempotency-Key")
        if key in self._results:
            return self._results[key]
        task = self._running.get(key)
        if task is None:
            task = self._running[key] = asyncio.create_task(self._effect(title, key))
        return await asyncio.shield(task)

    async def _effect(self, title: str, key: str) -> str:
        hold = self._holds.get(title)
        if hold is not None:
            hold.reached.set()
            while not hold.released.is_set():
                await asyncio.sleep(POLL_SECONDS)
        self._gateway.calls.append((title, key))
        self._results[key] = f"created issue: {title}"
        return self._results[key]


@dataclass
class IdempotentGateway:
    gateway: Gateway
    effects: Effects

    @property
    def url(self) -> str:
        return self.gateway.url


async def wait_reached(hold: Hold, timeout: float) -> None:
    """Until a request for the held title reached the server (bounded: a safety net, not a measure)."""
    deadline = time.monotonic() + timeout
    while not hold.reached.is_set():
        if time.monotonic() > deadline:
            raise AssertionError("the held tool call never reached the gateway")
        await asyncio.sleep(POLL_SECONDS)


@contextmanager
def serve_idempotent_gateway(*, team: str) -> Iterator[IdempotentGateway]:
    built: dict[str, Effects] = {}

    def build(gateway: Gateway) -> MCPServer:
        server = MCPServer("idempotent-gateway")
        effects = built["effects"] = Effects(gateway)

        @server.tool(name=TOOL, description="Open an issue (once per idempotency key)")
        async def create_issue(title: str, ctx: Context) -> str:
            return await effects.perform(title, (ctx.headers or {}).get("x-idempotency-key"))

        return server

    with serve_gateway(build, team=team) as gateway:
        yield IdempotentGateway(gateway, built["effects"])


@contextmanager
def fresh(served: IdempotentGateway) -> Iterator[IdempotentGateway]:
    """The gateway with no holds and nothing recorded, for one test (a call it left held is let go)."""
    served.effects.reset()
    try:
        yield served
    finally:
        served.effects.reset()
