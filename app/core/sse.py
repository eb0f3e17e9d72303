"""The one SSE response factory: pre-encoded frames, `: ping` heartbeats, cleanup on disconnect."""

from __future__ import annotations

from collections.abc import AsyncIterator

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.responses import Response

SSE_MEDIA_TYPE = "text/event-stream"


class EventStreamResponse(Response):
    """Declares `text/event-stream` in OpenAPI for routes that answer with `event_stream_response`."""

    media_type = SSE_MEDIA_TYPE


def encode_frame(seq: int, event_type: str, data_json: str) -> bytes:
    """One SSE frame. `data_json` is compact JSON (no newlines), so one `data:` line suffices."""
    return f"id: {seq}\nevent: {event_type}\ndata: {data_json}\n\n".encode()


def _ping() -> ServerSentEvent:
    return ServerSentEvent(comment="ping")


SEND_TIMEOUT_SECONDS = 30.0
"""A reader that accepts nothing for this long is dropped; it rejoins with Last-Event-ID."""


def event_stream_response(frames: AsyncIterator[bytes], *, ping_seconds: float) -> EventSourceResponse:
    """Followers read a turn's log by cursor, so a slow one holds no buffer and never slows the turn."""
    return EventSourceResponse(
        frames,
        ping=max(1, round(ping_seconds)),
        ping_message_factory=_ping,
        send_timeout=SEND_TIMEOUT_SECONDS,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
