"""The one SSE response: pre-encoded frames, `: ping` heartbeats, cleanup on disconnect, stuck readers dropped.

Written for this service's streams rather than taken from sse-starlette: every frame here is already
encoded (bytes), and sse-starlette spends per frame a cancel scope for its send timeout and an
encoding pass, which showed in the profiles of busy turns. Here a frame costs one `send`; pings, the
send timeout and disconnects are watched by one timer per stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from app.core.metrics import OPEN_STREAMS

SSE_MEDIA_TYPE = "text/event-stream"
PING_FRAME = b": ping\n\n"
SEND_TIMEOUT_SECONDS = 30.0
"""A reader that accepts nothing for this long is dropped; it rejoins with Last-Event-ID."""
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class EventStreamResponse(Response):
    """Declares `text/event-stream` in OpenAPI for routes that answer with `event_stream_response`."""

    media_type = SSE_MEDIA_TYPE


def retry_frame(milliseconds: int) -> bytes:
    """An SSE `retry:` line alone: the stream ends here, reconnect (with `Last-Event-ID`) after `milliseconds`."""
    return f"retry: {milliseconds}\n\n".encode()


def encode_frame(seq: int, event_type: str, data_json: str) -> bytes:
    """One SSE frame. `data_json` is compact JSON (no newlines), so one `data:` line suffices."""
    return f"id: {seq}\nevent: {event_type}\ndata: {data_json}\n\n".encode()


class _Clock:
    __slots__ = ("last_sent", "sending_since")

    def __init__(self, now: float) -> None:
        self.last_sent = now
        self.sending_since: float | None = None


class FrameStream(StreamingResponse):
    """Streams `frames` until they end, the client disconnects, or a send stalls `send_timeout` seconds.

    A `: ping` comment goes out after `ping_seconds` without a frame. Frames and pings never overlap
    (one lock); the frame iterator is closed in every case, so a follower's cleanup always runs.
    """

    def __init__(
        self, frames: AsyncIterator[bytes], *, ping_seconds: float, send_timeout: float = SEND_TIMEOUT_SECONDS
    ) -> None:
        super().__init__(frames, media_type=SSE_MEDIA_TYPE, headers=HEADERS)
        self._frames = frames
        self._ping_seconds = ping_seconds
        self._send_timeout = send_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        OPEN_STREAMS.inc()
        try:
            async with asyncio.timeout(self._send_timeout):
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            if await self._stream(receive, send):
                async with asyncio.timeout(self._send_timeout):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        except (OSError, TimeoutError):
            return
        finally:
            OPEN_STREAMS.dec()
            aclose = getattr(self._frames, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    async def _stream(self, receive: Receive, send: Send) -> bool:
        """Send frames and pings; True when the frames ended (False: the client left or stalled)."""
        loop = asyncio.get_running_loop()
        clock = _Clock(loop.time())
        lock = asyncio.Lock()
        pump = asyncio.create_task(self._pump(send, lock, clock))
        gone = asyncio.create_task(_until_disconnect(receive))
        tick = min(self._ping_seconds, self._send_timeout, 1.0)
        try:
            while True:
                await asyncio.wait((pump, gone), timeout=tick, return_when=asyncio.FIRST_COMPLETED)
                if pump.done():
                    return pump.result()
                now = loop.time()
                if gone.done() or (clock.sending_since is not None and now - clock.sending_since >= self._send_timeout):
                    return False
                idle = clock.sending_since is None and now - clock.last_sent >= self._ping_seconds
                if idle and not await self._ping(send, lock, clock):
                    return False
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(pump, gone, return_exceptions=True)

    async def _pump(self, send: Send, lock: asyncio.Lock, clock: _Clock) -> bool:
        """Send every frame; False if the client went away (the ASGI server raised on send)."""
        loop = asyncio.get_running_loop()
        async for chunk in self._frames:
            async with lock:
                clock.sending_since = loop.time()
                try:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                except OSError:
                    return False
                clock.sending_since = None
                clock.last_sent = loop.time()
        return True

    async def _ping(self, send: Send, lock: asyncio.Lock, clock: _Clock) -> bool:
        """False if the reader is gone or stuck (the ping could not be sent within the send timeout)."""
        loop = asyncio.get_running_loop()
        async with lock:
            try:
                async with asyncio.timeout(self._send_timeout):
                    await send({"type": "http.response.body", "body": PING_FRAME, "more_body": True})
            except (OSError, TimeoutError):
                return False
            clock.last_sent = loop.time()
        return True


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def event_stream_response(frames: AsyncIterator[bytes], *, ping_seconds: float) -> FrameStream:
    """Followers read a turn's log by cursor, so a slow one holds no buffer and never slows the turn."""
    return FrameStream(frames, ping_seconds=ping_seconds)
