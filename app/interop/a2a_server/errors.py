"""The JSON-RPC errors a client of the A2A protocol reads (never a 5xx)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from a2a.types import InvalidParamsError, InvalidRequestError, PushNotificationNotSupportedError, TaskNotFoundError
from a2a.utils.errors import ServerError

from app.errors import AppError


@contextlib.contextmanager
def as_rpc_errors() -> Iterator[None]:
    """A domain error as an invalid request carrying its HTTP status and code."""
    try:
        yield
    except AppError as exc:
        code = exc.extra.get("code") or exc.type_slug
        data = {"status": exc.status, "code": code}
        raise ServerError(error=InvalidRequestError(message=exc.detail, data=data)) from None


def not_found(task_id: str) -> ServerError:
    return ServerError(error=TaskNotFoundError(message=f"Task {task_id} not found"))


def invalid(message: str, data: Any = None) -> ServerError:
    return ServerError(error=InvalidParamsError(message=message, data=data))


def push_not_supported() -> ServerError:
    return ServerError(error=PushNotificationNotSupportedError(message="Push notifications are off (WEBHOOK_ENABLED)"))
