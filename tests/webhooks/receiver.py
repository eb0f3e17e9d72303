"""A real webhook receiver on loopback: records every POST (headers, body) and answers `status`."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.turns.loopback import serve_asgi


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int = 0
    status: int = 204
    received: list[Received] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, request: Request) -> Response:
        self.received.append(Received(dict(request.headers), await request.body()))
        return Response(status_code=self.status)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def receiver_on_free_port() -> Receiver:
    """A receiver whose port is chosen now; nothing listens there until `serve` (connections are refused)."""
    return Receiver(port=free_port())


@asynccontextmanager
async def serve(receiver: Receiver) -> AsyncIterator[Receiver]:
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    async with serve_asgi(app, port=receiver.port):
        yield receiver
