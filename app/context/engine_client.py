"""Context Engine client: Connect-over-HTTP, JSON, unary (DESIGN.md "External services").

Requests use the wire names of DESIGN.md; responses are read leniently as proto3 JSON does it
(lowerCamelCase accepted, omitted fields take their zero value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx

SERVICE_PATH = "/contextengine.v1.ContextEngine"
_UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
_MAX_DETAIL_CHARS = 300


class ContextEngineError(Exception):
    """The Context Engine answered with an error, or with something that is not its protocol."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class ContextEngineUnavailable(ContextEngineError):
    """The Context Engine could not be reached in time (network error, timeout, 502/503/504)."""


class ContextLayer(TypedDict):
    level: str | int
    content: str


class ContextDocument(TypedDict):
    id: str
    content: str


class HistoryEntry(TypedDict):
    role: str
    content: str


class Violation(TypedDict):
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class AssembledContext:
    system_prompt: str
    layers: list[ContextLayer] = field(default_factory=list)
    documents: list[ContextDocument] = field(default_factory=list)
    history: list[HistoryEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PromptValidation:
    valid: bool
    violations: list[Violation] = field(default_factory=list)


class ContextEngineClient:
    """One method per upstream operation, over the shared `httpx.AsyncClient` the lifespan owns."""

    def __init__(self, http: httpx.AsyncClient, *, base_url: str, timeout: float) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout

    async def assemble_context(self, token: str, *, session_id: str, agent_id: str, query: str) -> AssembledContext:
        body = {"session_id": session_id, "agent_id": agent_id, "query": query}
        data = await self._call("AssembleContext", token, body)
        try:
            return _assembled(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ContextEngineError("Context Engine AssembleContext: malformed response") from exc

    async def validate_prompt(
        self, token: str, *, session_id: str, guardrail_hashes: list[str], prompt: str
    ) -> PromptValidation:
        body = {"session_id": session_id, "guardrail_hashes": guardrail_hashes, "prompt": prompt}
        data = await self._call("ValidatePrompt", token, body)
        try:
            return _validation(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ContextEngineError("Context Engine ValidatePrompt: malformed response") from exc

    async def ingest_event(
        self, token: str, *, session_id: str, turn_id: str, loop: int, event: dict[str, Any]
    ) -> None:
        body = {"session_id": session_id, "turn_id": turn_id, "loop": loop, "event": event}
        await self._post("IngestEvent", token, body)

    async def _call(self, operation: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
        return _json_object(operation, await self._post(operation, token, body))

    async def _post(self, operation: str, token: str, body: dict[str, Any]) -> httpx.Response:
        try:
            response = await self._http.post(
                f"{self._base_url}{SERVICE_PATH}/{operation}",
                json=body,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Connect-Protocol-Version": "1",
                },
                timeout=self._timeout,
            )
        except httpx.TimeoutException:
            raise ContextEngineUnavailable(f"Context Engine {operation}: timed out") from None
        except httpx.HTTPError as exc:
            reason = _redact(str(exc), token)[:_MAX_DETAIL_CHARS] or type(exc).__name__
            raise ContextEngineUnavailable(f"Context Engine {operation}: unreachable: {reason}") from None
        if not response.is_success:
            raise _status_error(operation, response, token)
        return response


def _status_error(operation: str, response: httpx.Response, token: str) -> ContextEngineError:
    code, detail = _connect_error(response)
    text = f"Context Engine {operation}: HTTP {response.status_code}"
    if code:
        text += f" [{code}]"
    if detail:
        text += f": {_redact(detail, token)[:_MAX_DETAIL_CHARS]}"
    unavailable = response.status_code in _UNAVAILABLE_STATUSES or code == "unavailable"
    kind = ContextEngineUnavailable if unavailable else ContextEngineError
    return kind(text, status=response.status_code, code=code)


def _connect_error(response: httpx.Response) -> tuple[str | None, str | None]:
    """The `code` and `message` of a Connect error body, when the body is one."""
    try:
        body = response.json()
    except ValueError:
        return None, None
    if not isinstance(body, dict):
        return None, None
    code, message = body.get("code"), body.get("message")
    return (code if isinstance(code, str) else None, message if isinstance(message, str) else None)


def _redact(text: str, token: str) -> str:
    return text.replace(token, "[redacted]") if token else text


def _json_object(operation: str, response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as exc:
        raise ContextEngineError(
            f"Context Engine {operation}: response is not JSON", status=response.status_code
        ) from exc
    if not isinstance(data, dict):
        raise ContextEngineError(
            f"Context Engine {operation}: response is not a JSON object", status=response.status_code
        )
    return data


def _get(data: dict[str, Any], name: str, default: Any) -> Any:
    """A proto3 JSON field by its original or lowerCamelCase name, or its zero value."""
    head, *rest = name.split("_")
    camel = head + "".join(part.title() for part in rest)
    value = data.get(name, data.get(camel))
    return default if value is None else value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _objects(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    items = _get(data, name, [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise TypeError(f"{name} must be a list of objects")
    return items


def _level(value: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError("level must be a string or an integer")
    return value


def _assembled(data: dict[str, Any]) -> AssembledContext:
    return AssembledContext(
        system_prompt=_text(_get(data, "system_prompt", "")),
        layers=[
            ContextLayer(level=_level(_get(i, "level", "")), content=_text(_get(i, "content", "")))
            for i in _objects(data, "layers")
        ],
        documents=[
            ContextDocument(id=str(_get(i, "id", "")), content=_text(_get(i, "content", "")))
            for i in _objects(data, "documents")
        ],
        history=[
            HistoryEntry(role=_text(_get(i, "role", "")), content=_text(_get(i, "content", "")))
            for i in _objects(data, "history")
        ],
    )


def _validation(data: dict[str, Any]) -> PromptValidation:
    valid = _get(data, "valid", False)
    if not isinstance(valid, bool):
        raise TypeError("valid must be a boolean")
    violations = [
        Violation(code=_text(_get(i, "code", "")), message=_text(_get(i, "message", "")))
        for i in _objects(data, "violations")
    ]
    return PromptValidation(valid=valid, violations=violations)
