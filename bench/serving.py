"""What the bench's mock providers, floor servers and sink share: their app shell, command line and uvicorn."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import orjson
from fastapi import FastAPI, Request
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response
from starlette.routing import Route

TurnLoop = Callable[[str], AsyncIterator[dict[str, str]]]
"""A floor's whole turn for one user message, as SSE events (`token`, `tool`, `end`)."""
Endpoint = Callable[[StarletteRequest], Awaitable[Response]]


class Mock(Protocol):
    async def health(self, request: StarletteRequest) -> Response: ...


def mock_app(path: str, endpoint: Endpoint, mock: Mock) -> Starlette:
    """A mock provider: its one streaming endpoint at `path`, and `/health` with its request count."""
    return Starlette(routes=[Route(path, endpoint, methods=["POST"]), Route("/health", mock.health, methods=["GET"])])


def floor_app(turn: TurnLoop) -> FastAPI:
    """A floor: `POST /turns {"message": …}` streams `turn(message)`; `/health` for the bench's start-up."""
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/turns")
    async def turns(request: Request) -> EventSourceResponse:
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            body = {}
        message = body.get("message", "hi") if isinstance(body, dict) else "hi"
        return EventSourceResponse(turn(str(message)), ping=600)

    return app


def serve_mock(build: Callable[..., Starlette], behaviour: Callable[..., Any], *, prog: str, doc: str | None,
               port: int, argv: list[str] | None) -> None:  # fmt: skip
    """`python -m bench.mock_…`: the mock with the behaviour its flags describe, on loopback."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--tool-mode", action="store_true")
    args = parser.parse_args(argv)
    app = build(behaviour(tokens=args.tokens, delay_ms=args.delay_ms, tool_mode=args.tool_mode))
    serve(app, args.port)


FLOOR_CONNECTIONS = 1000
"""The floor SDK client's pool by default: the SDKs' own default limit."""


def serve_floor(build: Callable[[str, int], FastAPI], *, prog: str, doc: str | None, port: int, mock: str,
                argv: list[str] | None) -> None:  # fmt: skip
    """`python -m bench.floor_…`: the floor proxying the mock at `--mock`, on loopback; `--connections`
    sizes its SDK client's pool (the idle run matches it to the streams it opens)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--mock", default=mock)
    parser.add_argument("--connections", type=int, default=FLOOR_CONNECTIONS)
    args = parser.parse_args(argv)
    serve(build(args.mock, args.connections), args.port)


def serve(app: Any, port: int) -> None:
    """uvicorn on loopback, quiet: the bench reads its own figures, not access logs."""
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
