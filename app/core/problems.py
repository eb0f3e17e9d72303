"""One place that turns every error into application/problem+json (RFC 9457)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.core.sql import PoolExhausted
from app.errors import AppError, rule_code

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "https://agent-runtime.dev/problems/"
log = logging.getLogger(__name__)
_HTTP_SLUGS = {404: "not-found", 405: "method-not-allowed", 413: "payload-too-large"}


class Problem(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


def problem_response(
    request: Request,
    *,
    status: int,
    title: str,
    slug: str,
    detail: str,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": TYPE_BASE + slug,
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extra,
    }
    merged = dict(headers or {})
    if status == 401:
        merged.setdefault("WWW-Authenticate", "Bearer")
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=merged or None)


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Location, message and type of each error; never the offending input, which may hold secrets."""
    return [
        {"loc": [str(p) for p in err.get("loc", ())], "msg": err.get("msg", ""), "type": err.get("type", "")}
        for err in exc.errors()
    ]


def validation_problem(request: Request, errors: list[dict[str, Any]]) -> JSONResponse:
    """422 naming each offending field: `errors` holds `{loc, msg, type}`, never the input."""
    fields = ", ".join(".".join(str(part) for part in e["loc"]) for e in errors)
    code = rule_code(errors)
    coded: dict[str, Any] = {} if code is None else {"code": code}
    detail = f"Invalid request: {fields}"
    if code is not None:
        named = next(e for e in errors if e["type"] == code)
        detail = f"Invalid request: {'.'.join(str(p) for p in named['loc'])}: {named['msg']}"
    return problem_response(
        request,
        status=422,
        title="Unprocessable Content",
        slug="validation-error" if code is None else code.replace("_", "-"),
        detail=detail,
        errors=errors,
        **coded,
    )


def http_problem(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = dict(exc.headers or {})
    allowed = _allowed_methods(request) if exc.status_code == 405 else None
    if allowed:
        headers["Allow"] = ", ".join(allowed)
    slug = _HTTP_SLUGS.get(exc.status_code, "http-error")
    detail = exc.detail if isinstance(exc.detail, str) else "HTTP error"
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"No route for {request.method} {request.url.path}"
    elif exc.status_code == 405 and detail == "Method Not Allowed":
        detail = f"{request.method} is not allowed on {request.url.path}"
    return problem_response(
        request,
        status=exc.status_code,
        title=_title(exc.status_code),
        slug=slug,
        detail=detail,
        headers=headers,
    )


def _allowed_methods(request: Request) -> list[str] | None:
    """The methods the spec documents at this path (Starlette's own `Allow` names only the first
    route that matched it), or None for a path the spec does not describe."""
    path = request.url.path
    for template, operations in request.app.openapi().get("paths", {}).items():
        if re.fullmatch(_PARAMETER.sub("[^/]+", re.escape(template).replace(r"\{", "{").replace(r"\}", "}")), path):
            return sorted(method.upper() for method in operations)
    return None


_PARAMETER = re.compile(r"\{[^/{}]+\}")


def install_problem_handlers(app: FastAPI) -> None:
    _document_problems_only(app)

    @app.exception_handler(AppError)
    async def _app_error(request: Request, exc: AppError) -> JSONResponse:
        return problem_response(
            request,
            status=exc.status,
            title=exc.title,
            slug=exc.type_slug,
            detail=exc.detail,
            headers=exc.headers,
            **exc.extra,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_problem(request, _validation_errors(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return http_problem(request, exc)

    @app.exception_handler(PoolTimeout)
    @app.exception_handler(PoolExhausted)
    async def _pool_exhausted(request: Request, exc: Exception) -> JSONResponse:
        log.warning("database pool exhausted on %s %s", request.method, request.url.path)
        response = problem_response(
            request,
            status=503,
            title="Service Unavailable",
            slug="unavailable",
            detail="The service is at capacity; retry shortly",
        )
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(
            request, status=500, title="Internal Server Error", slug="internal", detail="Unexpected error"
        )


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries documenting problem+json for the given statuses.

    `model` registers the Problem schema; `_document_problems_only` then drops the JSON (or SSE)
    media type FastAPI adds next to it, since errors are only ever application/problem+json.
    """
    return {
        s: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": _PROBLEM_REF}},
            "description": _title(s),
        }
        for s in statuses
    }


ANY_OPERATION_STATUSES = (400, 500, 503)
"""What any operation may answer: an unreadable request (a malformed cursor, a body that is not
JSON), a bug, a database pool at capacity (503 with `Retry-After`)."""
WITH_BODY_STATUSES = (413,)


def _document_problems_only(app: FastAPI) -> None:
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    _add_common_problems(operation)
                    for response in operation.get("responses", {}).values():
                        content = response.get("content", {})
                        if PROBLEM_MEDIA_TYPE in content:
                            response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": _PROBLEM_REF}}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _add_common_problems(operation: dict[str, Any]) -> None:
    statuses = ANY_OPERATION_STATUSES + (WITH_BODY_STATUSES if "requestBody" in operation else ())
    responses = operation.setdefault("responses", {})
    for status, entry in problem_responses(*statuses).items():
        responses.setdefault(str(status), {"description": entry["description"], "content": entry["content"]})
