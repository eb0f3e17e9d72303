"""uvicorn's server, with a drain before the stop: SIGTERM first makes the replica unready and lets its
running turns finish; only then does uvicorn stop listening and shut the app down.

uvicorn alone stops accepting connections at once, so followers could not reconnect and replays
could not be served while a rolling deploy waits for the turns in flight.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from types import FrameType

import uvicorn
from fastapi import FastAPI

log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI, grace_seconds: float) -> None:
        super().__init__(config)
        self._app = app
        self._grace = grace_seconds
        self._drain: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)  # type: ignore[arg-type]

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first SIGTERM drains (a second one, or SIGINT, stops at once as uvicorn does)."""
        if sig != signal.SIGTERM or self._drain is not None or self._loop is None or not self.started:
            super().handle_exit(sig, frame)
            return
        self._loop.call_soon_threadsafe(self._start_drain)  # not re-raised at exit: a drained stop exits 0

    def _start_drain(self) -> None:
        if self._drain is None:
            self._drain = asyncio.create_task(self._drain_then_exit(), name="drain")

    async def _drain_then_exit(self) -> None:
        turns = self._app.state.container.turns
        log.info("SIGTERM: draining (unready, refusing new turns) for up to %ss", self._grace)
        try:
            left = await turns.drain(self._grace)
        finally:
            self.should_exit = True
        if left:
            log.warning("drain: %d turn(s) still running after %ss are handed over", left, self._grace)
