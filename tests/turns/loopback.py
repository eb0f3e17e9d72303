"""A real uvicorn server on 127.0.0.1, in the test's event loop, for tests that need true streaming.

httpx's ASGITransport buffers a whole response before returning it, so disconnects, cancels and
slow readers mid-stream can only be exercised over a socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.types import ASGIApp

from app.main import create_app
from app.settings import Settings

START_TIMEOUT_SECONDS = 30


@asynccontextmanager
async def serve_on_loopback(settings: Settings) -> AsyncIterator[str]:
    """Run a fresh app under uvicorn on a free loopback port; yields its base URL."""
    async with serve_asgi(create_app(settings), lifespan="on") as url:
        yield url


@asynccontextmanager
async def serve_asgi(app: ASGIApp, *, port: int = 0, lifespan: str = "auto") -> AsyncIterator[str]:
    """Run any ASGI app under uvicorn on 127.0.0.1 (`port` 0: a free one); yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan=lifespan, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(START_TIMEOUT_SECONDS):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn stopped before it started")
                await asyncio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{bound}"
    finally:
        server.should_exit = True
        await task
