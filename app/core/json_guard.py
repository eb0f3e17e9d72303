"""What a JSON body may hold, decided once for every route before any handler reads it.

Python's JSON reader takes more than the rest of the service can keep: a NUL character (PostgreSQL
refuses it in ``text`` and ``jsonb``), a lone surrogate (``\\ud800``: no UTF-8 encoding), integers of
any size (``jsonb`` keeps them, but our serialiser and every JavaScript client stop at 64 and 53
bits), ``NaN`` and ``Infinity`` (not JSON at all), and nesting as deep as its recursion limit. Each of
these once reached a driver or a serialiser and came back as a 500 after the request had been
accepted. This middleware refuses them with 422 naming the offending field (`errors[].loc`, as
pydantic does), so every stored document, whatever route wrote it, can be read back and sent out.

The body is buffered here (``BodySizeLimit`` outside bounds it) and handed to the app unchanged.
"""

from __future__ import annotations

import email.message
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.bounds import JSON_INT_MAX, MAX_JSON_DEPTH
from app.core.problems import http_problem, validation_problem

_MAX_INT_DIGITS = len(str(JSON_INT_MAX)) + 1


class _OutOfRange:
    """Stands in for an integer too long to be worth converting (Python refuses 4,300 digits)."""


_OUT_OF_RANGE = _OutOfRange()


@dataclass(frozen=True)
class Violation:
    loc: tuple[str | int, ...]
    msg: str
    type: str

    def as_error(self) -> dict[str, Any]:
        return {"loc": ["body", *(str(part) for part in self.loc)], "msg": self.msg, "type": self.type}


def decode_json(body: bytes) -> Any:
    """``json.loads`` that keeps over-long integers out of ``int`` and refuses ``NaN``/``Infinity``.

    Raises ``ValueError`` (``json.JSONDecodeError`` for syntax) or ``RecursionError``.
    """
    return json.loads(body, parse_int=_parse_int, parse_constant=_refuse_constant)


def find_violation(document: Any) -> Violation | None:
    """The first value (in document order) the service would not store, or None.

    A bad object key is reported at its object: the key itself cannot be named without echoing it.
    """
    for value, loc, depth in _walk(document):
        problem = _problem(value, depth)
        if problem is None and isinstance(value, dict):
            problem = next(filter(None, map(_string_problem, value)), None)
            problem = problem and (f"object keys: {problem[0]}", problem[1])
        if problem is not None:
            return Violation(loc, *problem)
    return None


def _walk(document: Any) -> Iterator[tuple[Any, tuple[str | int, ...], int]]:
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(document, (), 0)]
    while stack:
        value, loc, depth = stack.pop()
        yield value, loc, depth
        if depth >= MAX_JSON_DEPTH:
            continue
        if isinstance(value, dict):
            stack.extend((item, (*loc, key), depth + 1) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, (*loc, index), depth + 1) for index, item in reversed(list(enumerate(value))))


def _problem(value: Any, depth: int) -> tuple[str, str] | None:
    if isinstance(value, str):
        return _string_problem(value)
    if value is _OUT_OF_RANGE or (isinstance(value, int) and not isinstance(value, bool) and abs(value) > JSON_INT_MAX):
        return f"integers must lie within ±{JSON_INT_MAX} (2**53 - 1)", "int_out_of_range"
    if isinstance(value, float) and not math.isfinite(value):
        return "numbers must be finite", "float_not_finite"
    if isinstance(value, dict | list) and depth >= MAX_JSON_DEPTH:
        return f"objects and arrays nest at most {MAX_JSON_DEPTH} deep", "too_deeply_nested"
    return None


def _string_problem(text: str) -> tuple[str, str] | None:
    if "\x00" in text:
        return "strings must not contain the NUL character", "string_nul"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "strings must not contain a lone surrogate", "string_surrogate"
    return None


def _parse_int(digits: str) -> int | _OutOfRange:
    return int(digits) if len(digits) <= _MAX_INT_DIGITS else _OUT_OF_RANGE


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _is_json(scope: Scope) -> bool:
    content_type = dict(scope["headers"]).get(b"content-type")
    if content_type is None:
        return False
    message = email.message.Message()
    message["content-type"] = content_type.decode("latin-1")
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


class JsonBodyGuard:
    """ASGI middleware: a JSON body the service would not store answers 422 before any route runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            body = await _read_body(receive)
        except HTTPException as exc:  # e.g. 413 from BodySizeLimit while a chunked body arrives
            await http_problem(request, exc)(scope, receive, send)
            return
        violation = _check(body)
        if violation is not None:
            await validation_problem(request, [violation.as_error()])(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _check(body: bytes) -> Violation | None:
    if not body.strip():
        return None
    try:
        document = decode_json(body)
    except json.JSONDecodeError:
        return None  # FastAPI answers a syntax error itself, with its position
    except RecursionError:
        return Violation((), f"objects and arrays nest at most {MAX_JSON_DEPTH} deep", "too_deeply_nested")
    except ValueError as exc:  # not UTF-8, NaN/Infinity
        return Violation((), _decode_message(exc), "json_invalid")
    return find_violation(document)


def _decode_message(exc: ValueError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "the body is not UTF-8"
    return str(exc)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The buffered body once, then the client's own messages (a disconnect ends a stream)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
