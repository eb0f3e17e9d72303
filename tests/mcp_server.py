"""A real `mcp` server on loopback (uvicorn in a thread) that records what reaches it.

Shared by the MCP gateway client tests and the end-to-end integration tests: `mcp` talks over
httpx2, which respx cannot intercept, so these tests run the official server instead of a mock.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class Seen:
    """One HTTP request as it arrived at the server."""

    http_method: str
    rpc_method: str | None
    authorization: str | None
    idempotency_key: str | None
    client_port: int | None
    path: str = ""
    tool_name: str | None = None
    tool_arguments: dict[str, Any] | None = None


@dataclass
class Gateway:
    url: str
    requests: list[Seen] = field(default_factory=list)
    calls: list[tuple[str, str | None]] = field(default_factory=list)
    """What tools record about their own invocations (e.g. title and idempotency key)."""

    def rpc(self, method: str) -> list[Seen]:
        return [r for r in self.requests if r.rpc_method == method]

    def clear(self) -> None:
        self.requests.clear()
        self.calls.clear()


class Recorder:
    """ASGI wrapper: records each request, refuses one bearer, and can play a pre-2026 gateway."""

    def __init__(self, app: Asgi, gateway: Gateway, *, legacy_only: bool, rejected_bearer: str | None) -> None:
        self.app, self.gateway = app, gateway
        self.legacy_only, self.rejected_bearer = legacy_only, rejected_bearer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        rpc = _rpc(body)
        call = (rpc.get("params") or {}) if rpc.get("method") == "tools/call" else {}
        seen = Seen(
            scope["method"],
            rpc.get("method"),
            headers.get("authorization"),
            headers.get("x-idempotency-key"),
            (scope.get("client") or (None, None))[1],
            path=scope["path"],
            tool_name=call.get("name"),
            tool_arguments=call.get("arguments"),
        )
        self.gateway.requests.append(seen)
        if self.rejected_bearer is not None and seen.authorization == f"Bearer {self.rejected_bearer}":
            await _respond(send, 401, b"invalid token " + self.rejected_bearer.encode(), "text/plain")
            return
        if self.legacy_only and seen.rpc_method == "server/discover":
            error = {"jsonrpc": "2.0", "id": rpc["id"], "error": {"code": -32601, "message": "nope"}}
            await _respond(send, 200, json.dumps(error).encode(), "application/json")
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(receive: Receive) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _rpc(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


async def _respond(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def _serve(app: Asgi) -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test MCP server did not start")
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serve_gateway(
    build: Callable[[Gateway], MCPServer],
    *,
    team: str,
    legacy_only: bool = False,
    rejected_bearer: str | None = None,
) -> Iterator[Gateway]:
    """Serve `build(gateway)` at `/mcp/team/{team}` on a free loopback port until the block ends."""
    gateway = Gateway(url="")
    app = build(gateway).streamable_http_app(streamable_http_path=f"/mcp/team/{team}")
    recorder = Recorder(app, gateway, legacy_only=legacy_only, rejected_bearer=rejected_bearer)
    with _serve(recorder) as port:
        gateway.url = f"http://127.0.0.1:{port}"
        yield gateway


def dead_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
