"""Structured logs: one JSON object per line (or a console rendering), with the request's and turn's ids.

Every logger writes through the standard library's root logger, so the service's own `structlog`
lines and those of libraries (uvicorn, SQLAlchemy, the SDKs) come out in one format. The ids come
from `structlog.contextvars`: the request middleware binds `request_id` (and the caller's
`tenant_id` once authenticated), a turn's task binds `session_id` and `turn_id`. A task started
while serving a request inherits them (asyncio copies the context), and never leaks them back.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog
from structlog.types import EventDict, Processor, WrappedLogger

LOGGER_NAME = "agent_runtime"
QUIET_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "anthropic", "mcp")
"""Libraries that log a line per outbound request, with its full URL: a webhook URL may carry a
token in its path or query. The service's own outbound calls are spans (when traced), not lines."""
REDACTED = "[redacted]"
_SECRET_NAMES = frozenset({"authorization", "cookie", "token", "secret", "password", "api_key", "apikey"})
_SECRET_SUFFIXES = ("_token", "_secret", "_password", "_api_key")


def _redact_secrets(_logger: WrappedLogger, _method: str, event: EventDict) -> EventDict:
    """A field whose name says it holds a credential never reaches the output, whoever logged it."""
    for key in event:
        lowered = key.lower()
        if lowered in _SECRET_NAMES or lowered.endswith(_SECRET_SUFFIXES):
            event[key] = REDACTED
    return event


def _json_dumps(value: MutableMapping[str, Any], **_: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        _redact_secrets,
    ]


def formatter(log_format: str) -> logging.Formatter:
    """The formatter every line goes through (the root handler's; tests capture with it too)."""
    renderer: Processor = (
        structlog.dev.ConsoleRenderer(colors=False)
        if log_format == "console"
        else structlog.processors.JSONRenderer(serializer=_json_dumps)
    )
    tail: list[Processor] = [] if log_format == "console" else [structlog.processors.format_exc_info]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *tail, renderer],
    )


class _ServiceHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler this module installs (and replaces when configured again)."""


def configure_logging(log_format: str = "json", level: str = "info") -> None:
    """Idempotent: replaces only the handler an earlier call installed."""
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _ServiceHandler)]:
        root.removeHandler(handler)
    handler = _ServiceHandler(sys.stderr)
    handler.setFormatter(formatter(log_format))
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def get_logger(name: str = LOGGER_NAME) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger


def bind(**values: object) -> None:
    """Add ids to every later line of this task (and of the tasks it starts)."""
    structlog.contextvars.bind_contextvars(**values)
