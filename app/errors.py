"""Domain errors, rendered as RFC 9457 problem+json by one handler (see app.core.problems)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError

RULE_ERROR_TYPES = frozenset({"invalid_output_schema", "output_schema_unsupported", "unknown_part_type"})
"""Validation error types that name a rule: a 422 carrying one takes it as its `code` (and `type`)."""


def rule_code(errors: list[dict[str, Any]]) -> str | None:
    return next((str(e["type"]) for e in errors if e.get("type") in RULE_ERROR_TYPES), None)


class AppError(Exception):
    """Base of every expected failure; carries its HTTP status and a stable problem type."""

    status: int = 500
    title: str = "Internal Server Error"
    type_slug: str = "internal"

    def __init__(self, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


class BadRequest(AppError):
    status, title, type_slug = 400, "Bad Request", "bad-request"


class Unauthorized(AppError):
    status, title, type_slug = 401, "Unauthorized", "unauthorized"


class Forbidden(AppError):
    status, title, type_slug = 403, "Forbidden", "forbidden"


class NotFound(AppError):
    status, title, type_slug = 404, "Not Found", "not-found"


class Conflict(AppError):
    status, title, type_slug = 409, "Conflict", "conflict"


class PayloadTooLarge(AppError):
    status, title, type_slug = 413, "Payload Too Large", "payload-too-large"


class UnsupportedMediaType(AppError):
    status, title, type_slug = 415, "Unsupported Media Type", "unsupported-media-type"


class InvalidInput(AppError):
    """A semantically invalid field that passed schema validation (422 with the field named)."""

    status, title, type_slug = 422, "Unprocessable Content", "validation-error"

    def __init__(self, detail: str, *, field: str) -> None:
        super().__init__(detail, errors=[{"loc": field.split("."), "msg": detail, "type": "value_error"}])


class RuleViolation(AppError):
    """A request that is well-formed but breaks a rule of the tenant (422); `code` names the rule.

    The problem carries `code` (snake_case, also the last segment of `type` in kebab-case).
    """

    status, title = 422, "Unprocessable Content"

    def __init__(self, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail, code=code, **extra)
        self.type_slug = code.replace("_", "-")


class InvalidDocument(AppError):
    """A document that fails validation once assembled (e.g. a config after a merge patch): 422, each error located."""

    status, title, type_slug = 422, "Unprocessable Content", "validation-error"

    def __init__(self, detail: str, *, errors: list[dict[str, Any]]) -> None:
        code = rule_code(errors)
        if code is None:
            super().__init__(detail, errors=errors)
            return
        super().__init__(detail, errors=errors, code=code)
        self.type_slug = code.replace("_", "-")

    @classmethod
    def of(cls, exc: ValidationError, *location: str, what: str) -> InvalidDocument:
        """Each error of `exc` located under `location` (e.g. `body`, `config`); never the input value."""
        errors = [
            {"loc": [*location, *(str(p) for p in e["loc"])], "msg": e["msg"], "type": e["type"]} for e in exc.errors()
        ]
        fields = ", ".join(".".join(e["loc"]) for e in errors)
        return cls(f"{what} is invalid: {fields}", errors=errors)


class NotAcceptable(AppError):
    status, title, type_slug = 406, "Not Acceptable", "not-acceptable"


class TooManyRequests(AppError):
    """A ceiling refuses the request for now (429 with `Retry-After` in whole seconds); `code` names it."""

    status, title = 429, "Too Many Requests"

    def __init__(self, code: str, detail: str, *, retry_after: int, **extra: Any) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, retry_after))}, code=code, **extra)
        self.type_slug = code.replace("_", "-")


class ServiceUnavailable(AppError):
    status, title, type_slug = 503, "Service Unavailable", "unavailable"


def session_not_open(session_id: uuid.UUID, status: str) -> Conflict:
    """409 for a turn (or a decision) on a session that ended; `code` says which way it ended."""
    if status == "expired":
        return Conflict(f"Session {session_id} expired: it was idle too long", code="session_expired")
    return Conflict(f"Session {session_id} is closed", code="session_closed")
