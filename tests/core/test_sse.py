"""`FrameStream` (app/core/sse.py) at the ASGI level, plus a few checks over a real uvicorn socket.

Most tests call `await FrameStream(gen(), ping_seconds=..., send_timeout=...)(scope, receive, send)` with a
recording `send` and a `receive` that either never returns (a connected client) or reports a disconnect.
Every call runs under `asyncio.timeout` so a regression fails fast instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn

from app.core.sse import PING_FRAME, FrameStream, encode_frame

GUARD_SECONDS = 5.0
"""Upper bound on any single FrameStream call, so a bug cannot hang the suite."""

SCOPE: dict[str, Any] = {"type": "http", "method": "GET", "path": "/events", "headers": []}

Message = dict[str, Any]


def frame(seq: int) -> bytes:
    return encode_frame(seq, "tick", f'{{"n":{seq}}}')


async def forever() -> None:
    await asyncio.Event().wait()


async def connected_client() -> Message:
    """A `receive` for a client that stays connected and sends nothing more."""
    await forever()
    raise AssertionError("unreachable")


@dataclass
class Recorder:
    """A `send` that records every message (with the loop time it was sent) and can be told to misbehave."""

    on_send: Callable[[Message], Awaitable[None]] | None = None
    messages: list[Message] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    async def __call__(self, message: Message) -> None:
        if self.on_send is not None:
            await self.on_send(message)
        self.messages.append(message)
        self.times.append(asyncio.get_running_loop().time())

    @property
    def start(self) -> Message:
        assert self.messages[0]["type"] == "http.response.start"
        return self.messages[0]

    @property
    def bodies(self) -> list[Message]:
        assert all(m["type"] == "http.response.body" for m in self.messages[1:])
        return self.messages[1:]

    @property
    def chunks(self) -> list[bytes]:
        return [m["body"] for m in self.bodies]

    @property
    def final_sent(self) -> bool:
        return any(not m.get("more_body", False) for m in self.bodies)

    def headers(self) -> dict[str, str]:
        return {k.decode().lower(): v.decode() for k, v in self.start["headers"]}


@dataclass
class Tracked:
    """Flags flipped by a frame generator, to prove its `finally` ran."""

    closed: bool = False
    started: bool = False


async def idle_frames(tracked: Tracked) -> AsyncIterator[bytes]:
    """A frame source that never yields; records that its cleanup ran."""
    try:
        await forever()
        yield b""  # pragma: no cover
    finally:
        tracked.closed = True


async def endless_frames(tracked: Tracked) -> AsyncIterator[bytes]:
    """Frames 1, 2, 3, … as fast as they are taken; records that its cleanup ran."""
    try:
        seq = 0
        while True:
            seq += 1
            yield frame(seq)
    finally:
        tracked.closed = True


async def run(
    frames: AsyncIterator[bytes],
    send: Recorder,
    *,
    receive: Callable[[], Awaitable[Message]] = connected_client,
    ping_seconds: float = 10.0,
    send_timeout: float = 10.0,
) -> float:
    """Run one FrameStream to completion under the guard; returns the elapsed seconds."""
    began = time.monotonic()
    async with asyncio.timeout(GUARD_SECONDS):
        await FrameStream(frames, ping_seconds=ping_seconds, send_timeout=send_timeout)(SCOPE, receive, send)
    return time.monotonic() - began


# 1. Frames, in order, one body each, then one final empty body; SSE headers.


async def test_frames_go_out_in_order_then_one_final_empty_body() -> None:
    tracked = Tracked()

    async def gen() -> AsyncIterator[bytes]:
        try:
            for seq in range(1, 6):
                yield frame(seq)
        finally:
            tracked.closed = True

    send = Recorder()
    await run(gen(), send)

    assert send.start["status"] == 200
    assert [m["body"] for m in send.bodies[:-1]] == [frame(seq) for seq in range(1, 6)]
    assert all(m["more_body"] is True for m in send.bodies[:-1])
    assert send.bodies[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert sum(1 for m in send.bodies if not m["more_body"]) == 1
    assert tracked.closed

    headers = send.headers()
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["cache-control"] == "no-cache"
    assert "content-length" not in headers


async def test_an_empty_stream_sends_only_the_final_body() -> None:
    async def gen() -> AsyncIterator[bytes]:
        return
        yield b""  # pragma: no cover - makes this an async generator

    send = Recorder()
    await run(gen(), send)
    assert send.bodies == [{"type": "http.response.body", "body": b"", "more_body": False}]


async def test_request_messages_from_receive_do_not_end_the_stream() -> None:
    """Only `http.disconnect` ends the stream; a stray `http.request` message is ignored."""
    requests = [{"type": "http.request", "body": b"", "more_body": False}] * 3

    async def receive() -> Message:
        if requests:
            return requests.pop()
        return await connected_client()

    async def gen() -> AsyncIterator[bytes]:
        for seq in range(1, 4):
            await asyncio.sleep(0.02)
            yield frame(seq)

    send = Recorder()
    await run(gen(), send, receive=receive)
    assert send.chunks == [frame(1), frame(2), frame(3), b""]
    assert send.final_sent


# 2. Pings on an idle stream; none while frames flow.


async def test_idle_stream_gets_pings_and_later_frames_still_go_out() -> None:
    ping = 0.1

    async def gen() -> AsyncIterator[bytes]:
        yield frame(1)
        await asyncio.sleep(0.55)
        yield frame(2)

    send = Recorder()
    await run(gen(), send, ping_seconds=ping)

    chunks = send.chunks
    assert chunks[0] == frame(1)
    assert chunks[-2:] == [frame(2), b""]
    pings = chunks[1:-2]
    assert pings, "an idle stream must carry pings"
    assert set(pings) == {PING_FRAME}
    # one ping per idle period of at least `ping_seconds` (the timer ticks every ping_seconds, so up to ~2x)
    assert 2 <= len(pings) <= 6, len(pings)
    body_times = send.times[1:]
    ping_times = body_times[1 : 1 + len(pings)]
    gaps = [b - a for a, b in zip([body_times[0], *ping_times], ping_times, strict=False)]
    assert all(gap >= ping * 0.9 for gap in gaps), gaps
    assert all(body["more_body"] is True for body in send.bodies[:-1])


async def test_no_ping_while_frames_flow_faster_than_ping_seconds() -> None:
    async def gen() -> AsyncIterator[bytes]:
        for seq in range(1, 16):
            await asyncio.sleep(0.02)
            yield frame(seq)

    send = Recorder()
    elapsed = await run(gen(), send, ping_seconds=0.15)

    assert elapsed > 0.15 * 1.5, "the stream must outlast several ping periods for this test to mean anything"
    assert PING_FRAME not in send.chunks
    assert send.chunks == [*(frame(seq) for seq in range(1, 16)), b""]


# 3. A stuck reader is dropped after send_timeout.


async def test_send_stuck_on_a_frame_drops_the_stream_after_send_timeout() -> None:
    tracked = Tracked()

    async def stuck_on_second_frame(message: Message) -> None:
        if message.get("body") == frame(2):
            await forever()

    send = Recorder(on_send=stuck_on_second_frame)
    elapsed = await run(endless_frames(tracked), send, ping_seconds=10.0, send_timeout=0.15)

    assert 0.14 <= elapsed < 3.0, elapsed
    assert tracked.closed, "the generator's finally must run when a stuck reader is dropped"
    assert send.chunks == [frame(1)]
    assert not send.final_sent


async def test_send_stuck_on_a_ping_drops_the_stream_after_send_timeout() -> None:
    tracked = Tracked()

    async def stuck_on_ping(message: Message) -> None:
        if message.get("body") == PING_FRAME:
            await forever()

    send = Recorder(on_send=stuck_on_ping)
    elapsed = await run(idle_frames(tracked), send, ping_seconds=0.05, send_timeout=0.15)

    assert 0.15 <= elapsed < 3.0, elapsed
    assert tracked.closed
    assert send.bodies == []
    assert not send.final_sent


async def test_send_stuck_on_the_final_body_is_also_dropped_after_send_timeout() -> None:
    tracked = Tracked()

    async def gen() -> AsyncIterator[bytes]:
        try:
            yield frame(1)
        finally:
            tracked.closed = True

    async def stuck_on_final(message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            await forever()

    send = Recorder(on_send=stuck_on_final)
    began = time.monotonic()
    # generous against send_timeout=0.1, short so the expected failure is cheap
    async with asyncio.timeout(1.5):
        await FrameStream(gen(), ping_seconds=10.0, send_timeout=0.1)(SCOPE, connected_client, send)
    assert time.monotonic() - began < 1.0
    assert tracked.closed


# 4. A client disconnect ends the stream promptly.


async def test_disconnect_while_generator_waits_ends_the_stream_promptly() -> None:
    tracked = Tracked()

    async def gen() -> AsyncIterator[bytes]:
        try:
            yield frame(1)
            await forever()
        finally:
            tracked.closed = True

    async def receive() -> Message:
        await asyncio.sleep(0.1)
        return {"type": "http.disconnect"}

    send = Recorder()
    elapsed = await run(gen(), send, receive=receive, ping_seconds=10.0, send_timeout=10.0)

    assert 0.09 <= elapsed < 3.0, elapsed
    assert tracked.closed
    assert send.chunks == [frame(1)]
    assert not send.final_sent


# 5. OSError from send = the client went away: quiet end.


async def test_oserror_on_a_frame_send_ends_the_stream_quietly() -> None:
    tracked = Tracked()

    async def reset_on_third_frame(message: Message) -> None:
        if message.get("body") == frame(3):
            raise ConnectionResetError("peer reset")

    send = Recorder(on_send=reset_on_third_frame)
    await run(endless_frames(tracked), send)  # no exception escapes

    assert tracked.closed
    assert send.chunks == [frame(1), frame(2)]
    assert not send.final_sent


async def test_oserror_on_a_ping_send_ends_the_stream_quietly() -> None:
    tracked = Tracked()

    async def broken_pipe(message: Message) -> None:
        if message.get("body") == PING_FRAME:
            raise BrokenPipeError("gone")

    send = Recorder(on_send=broken_pipe)
    elapsed = await run(idle_frames(tracked), send, ping_seconds=0.05)

    assert elapsed < 3.0
    assert tracked.closed
    assert send.bodies == []


# 6. A failing generator: the error propagates, cleanup still ran.


async def test_generator_exception_propagates_after_cleanup() -> None:
    tracked = Tracked()

    async def gen() -> AsyncIterator[bytes]:
        try:
            yield frame(1)
            await asyncio.sleep(0.02)
            raise ValueError("boom")
        finally:
            tracked.closed = True

    send = Recorder()
    with pytest.raises(ValueError, match="boom"):
        await run(gen(), send)

    assert tracked.closed
    assert send.chunks == [frame(1)]
    assert not send.final_sent, "a stream that failed must not look like one that ended normally"


async def test_cancelling_the_response_closes_the_generator() -> None:
    """The server cancelling the ASGI task (e.g. on shutdown) still runs the generator's finally."""
    tracked = Tracked()

    async def gen() -> AsyncIterator[bytes]:
        try:
            yield frame(1)
            await forever()
        finally:
            tracked.closed = True

    send = Recorder()
    task = asyncio.create_task(FrameStream(gen(), ping_seconds=10.0)(SCOPE, connected_client, send))
    await asyncio.sleep(0.05)
    task.cancel()
    async with asyncio.timeout(GUARD_SECONDS):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert tracked.closed
    assert not send.final_sent


# 7. Pings and frames never overlap.


async def test_pings_and_frames_are_never_sent_concurrently() -> None:
    in_flight = 0
    peak = 0

    async def slow_send(message: Message) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await asyncio.sleep(0.03)
        finally:
            in_flight -= 1

    async def gen() -> AsyncIterator[bytes]:
        # bursts separated by idle gaps, so frames become ready while pings are in flight and vice versa
        for seq in range(1, 13):
            yield frame(seq)
            await asyncio.sleep(0.07 if seq % 3 == 0 else 0.01)

    send = Recorder(on_send=slow_send)
    await run(gen(), send, ping_seconds=0.04, send_timeout=1.0)

    assert peak == 1, f"{peak} sends were in flight at once"
    assert PING_FRAME in send.chunks, "the scenario must produce pings to prove anything"
    assert [c for c in send.chunks if c != PING_FRAME] == [*(frame(seq) for seq in range(1, 13)), b""]


# 8. Over a real socket with uvicorn.


@asynccontextmanager
async def serve(app: Callable[..., Awaitable[None]]) -> AsyncIterator[int]:
    """Serve a bare ASGI app with uvicorn on a free loopback port (like tests/turns/loopback.py); yields the port."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="off", log_level="warning", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(GUARD_SECONDS):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn stopped before it started")
                await asyncio.sleep(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        async with asyncio.timeout(GUARD_SECONDS):
            await task


def frame_app(
    frames: Callable[[], AsyncIterator[bytes]], returned: asyncio.Event, *, send_timeout: float = 10.0
) -> Callable[..., Awaitable[None]]:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            await FrameStream(frames(), ping_seconds=0.05, send_timeout=send_timeout)(scope, receive, send)
        finally:
            returned.set()

    return app


async def test_frames_stream_over_a_real_socket_and_the_response_closes() -> None:
    tracked = Tracked()
    returned = asyncio.Event()

    async def gen() -> AsyncIterator[bytes]:
        try:
            for seq in range(1, 4):
                yield frame(seq)
                await asyncio.sleep(0.12)  # long enough for a ping between frames
        finally:
            tracked.closed = True

    async with serve(frame_app(gen, returned)) as port, httpx.AsyncClient(timeout=GUARD_SECONDS) as http:
        async with asyncio.timeout(GUARD_SECONDS), http.stream("GET", f"http://127.0.0.1:{port}/") as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            assert "content-length" not in response.headers
            lines = [line async for line in response.aiter_lines()]  # ends only when the response closes
        async with asyncio.timeout(GUARD_SECONDS):
            await returned.wait()

    assert [line for line in lines if line.startswith("id: ")] == ["id: 1", "id: 2", "id: 3"]
    assert [line for line in lines if line.startswith("data: ")] == [f'data: {{"n":{n}}}' for n in (1, 2, 3)]
    assert ": ping" in lines
    assert tracked.closed


async def test_client_hanging_up_over_a_real_socket_runs_the_generator_cleanup() -> None:
    tracked = Tracked()
    returned = asyncio.Event()

    async def gen() -> AsyncIterator[bytes]:
        try:
            yield frame(1)
            await forever()
        finally:
            tracked.closed = True

    async with serve(frame_app(gen, returned)) as port, httpx.AsyncClient(timeout=GUARD_SECONDS) as http:
        async with asyncio.timeout(GUARD_SECONDS), http.stream("GET", f"http://127.0.0.1:{port}/") as response:
            async for line in response.aiter_lines():
                if line == "id: 1":
                    break
        # leaving the block mid-stream closes the connection; uvicorn reports http.disconnect
        async with asyncio.timeout(GUARD_SECONDS):
            await returned.wait()
    assert tracked.closed


async def test_reader_that_stops_reading_before_the_end_is_dropped_over_a_real_socket() -> None:
    """A big last frame fills the socket buffers; then the frames end and only the final empty body is left."""
    returned = asyncio.Event()

    async def gen() -> AsyncIterator[bytes]:
        yield b"data: " + b"x" * (16 * 1024 * 1024) + b"\n\n"

    loop = asyncio.get_running_loop()
    async with serve(frame_app(gen, returned, send_timeout=0.2)) as port:
        client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.setblocking(False)
            await loop.sock_connect(client, ("127.0.0.1", port))
            await loop.sock_sendall(client, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            # the client never reads; a stuck reader must be dropped after about send_timeout
            await asyncio.wait_for(returned.wait(), 1.5)
        finally:
            client.close()  # also frees a response stuck in uvicorn's drain, so the server can shut down
            async with asyncio.timeout(GUARD_SECONDS):
                await returned.wait()
