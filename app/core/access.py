"""One ASGI middleware per request: its id, its access log line, its duration metric and its server span.

`X-Request-ID` is taken from the request when it is a short printable token (anything else is
replaced, never echoed), generated otherwise, bound to every log line of the request and echoed in
the response. The access line and the metric carry the route template (`/sessions/{session_id}`),
never the raw path with ids, nor the query string (a stream token travels there).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import structlog
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core import tracing
from app.core.logs import get_logger
from app.core.metrics import HTTP_DURATION

REQUEST_ID_HEADER = b"x-request-id"
_VALID_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:\-]{1,128}")
UNMATCHED_ROUTE = "unmatched"

log = get_logger("agent_runtime.access")


@dataclass(slots=True)
class _Exchange:
    request_id: str
    status: int = 500
    fields: dict[str, Any] = field(default_factory=dict)


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name == REQUEST_ID_HEADER:
            return value.decode("ascii") if _VALID_REQUEST_ID.fullmatch(value) else uuid.uuid4().hex
    return uuid.uuid4().hex


def route_of(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED_ROUTE


class RequestObserver:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(request_id_from(scope["headers"]))
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=exchange.request_id)
        method: str = scope["method"]
        header_value = exchange.request_id.encode("ascii")

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                message["headers"] = [*message.get("headers", ()), (REQUEST_ID_HEADER, header_value)]
            await send(message)

        started = time.perf_counter()
        parent = extract(_carrier(scope)) if tracing.enabled() else None
        with tracing.span(method, _request_attributes(scope), kind=SpanKind.SERVER, parent=parent) as span:
            try:
                await self.app(scope, receive, observed_send)
            finally:
                elapsed = time.perf_counter() - started
                route = route_of(scope)
                HTTP_DURATION.labels(method=method, route=route, status=str(exchange.status)).observe(elapsed)
                if span is not None:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                    span.set_attribute("http.response.status_code", exchange.status)
                    if exchange.status >= 500:
                        tracing.set_error(span, str(exchange.status))
                log.info(
                    "request",
                    method=method,
                    path=scope["path"],
                    route=route,
                    status=exchange.status,
                    duration_ms=round(elapsed * 1000, 2),
                )
                structlog.contextvars.clear_contextvars()


def _carrier(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def _request_attributes(scope: Scope) -> dict[str, str]:
    return {"http.request.method": scope["method"], "url.path": scope["path"], "url.scheme": scope["scheme"]}
