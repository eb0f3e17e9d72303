"""ASGI middleware answering 413 problem+json for request bodies over the configured size."""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.problems import PROBLEM_MEDIA_TYPE, TYPE_BASE


class _TooLarge(HTTPException):
    """Raised from `receive`; FastAPI re-raises HTTPExceptions, so the problem handler renders it."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"Request body exceeds {max_bytes} bytes")


MULTIPART_ENVELOPE_BYTES = 64 * 1024
"""What an upload's multipart framing may add to the file it carries (boundaries, part headers)."""


class BodySizeLimit:
    """`per_path` gives an exact path its own ceiling (an upload route takes more than a JSON body);
    a body over it is refused from its Content-Length before any of it is read, or, without one, as
    soon as what arrived passes the ceiling."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, per_path: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.default_bytes = max_bytes
        self.per_path = dict(per_path or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope.get("path", ""), self.default_bytes)
        await _Bounded(self.app, limit)(scope, receive, send)


class _Bounded:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit():
            # The HTTP server delivers exactly Content-Length bytes: checking the header is enough.
            if int(declared) > self.max_bytes:
                await self._reject(scope, send)
            else:
                await self.app(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        await self.app(scope, limited_receive, send)

    async def _reject(self, scope: Scope, send: Send) -> None:
        body = orjson.dumps(
            {
                "type": TYPE_BASE + "payload-too-large",
                "title": "Payload Too Large",
                "status": 413,
                "detail": f"Request body exceeds {self.max_bytes} bytes",
                "instance": scope.get("path"),
            }
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
