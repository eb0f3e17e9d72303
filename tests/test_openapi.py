"""The OpenAPI document is good enough to generate a client; health endpoints tell the truth."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.db import create_engine
from app.settings import Settings
from tests.conftest import make_settings, running_app

PROBLEM = "application/problem+json"
PROBLEM_REF = "#/components/schemas/Problem"
UNREACHABLE_DB = "postgresql+asyncpg://postgres@127.0.0.1:1/unreachable"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


@pytest.fixture(scope="module")
def spec(settings: Settings) -> dict[str, Any]:
    from app.main import create_app

    return create_app(settings).openapi()


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def _label(method: str, path: str) -> str:
    return f"{method} {path}"


def test_every_operation_has_a_unique_operation_id(spec: dict[str, Any]) -> None:
    ids = [op.get("operationId") for _, _, op in operations(spec)]
    assert all(ids), [_label(m, p) for m, p, op in operations(spec) if not op.get("operationId")]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_every_operation_has_a_tag(spec: dict[str, Any]) -> None:
    untagged = [_label(m, p) for m, p, op in operations(spec) if not op.get("tags")]
    assert untagged == []


def test_design_routes_are_documented(spec: dict[str, Any]) -> None:
    documented = {(m, p) for m, p, _ in operations(spec)}
    for route in [
        ("POST", "/agents"),
        ("GET", "/agents"),
        ("GET", "/agents/{agent_id}"),
        ("PATCH", "/agents/{agent_id}"),
        ("DELETE", "/agents/{agent_id}"),
        ("GET", "/agents/{agent_id}/versions"),
        ("GET", "/agents/{agent_id}/versions/{version}"),
        ("POST", "/sessions"),
        ("GET", "/sessions"),
        ("GET", "/sessions/{session_id}"),
        ("DELETE", "/sessions/{session_id}"),
        ("GET", "/sessions/{session_id}/messages"),
        ("GET", "/healthz"),
        ("GET", "/readyz"),
    ]:
        assert route in documented, route


def test_error_responses_are_problem_json_only(spec: dict[str, Any]) -> None:
    wrong = []
    for method, path, op in operations(spec):
        for status, response in op["responses"].items():
            if not status.startswith(("4", "5")):
                continue
            content = response.get("content", {})
            if set(content) != {PROBLEM} or content[PROBLEM].get("schema", {}).get("$ref") != PROBLEM_REF:
                wrong.append((_label(method, path), status, sorted(content)))
    assert wrong == []
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    problem = spec["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail"} <= set(problem["required"])


def test_authenticated_operations_document_401(spec: dict[str, Any]) -> None:
    missing = [_label(m, p) for m, p, op in operations(spec) if op.get("security") and "401" not in op["responses"]]
    assert missing == []


def test_operations_with_input_document_422(spec: dict[str, Any]) -> None:
    missing = [
        _label(m, p)
        for m, p, op in operations(spec)
        if (op.get("parameters") or op.get("requestBody")) and "422" not in op["responses"]
    ]
    assert missing == []


def test_every_operation_documents_what_any_request_may_meet(spec: dict[str, Any]) -> None:
    """400 (a malformed cursor or unreadable body), 500, 503 (pool at capacity) anywhere; 413 with a body."""
    missing = [
        (_label(m, p), status)
        for m, p, op in operations(spec)
        for status in ("400", "500", "503", *(("413",) if "requestBody" in op else ()))
        if status not in op["responses"]
    ]
    assert missing == []


def test_operations_on_a_resource_id_document_404(spec: dict[str, Any]) -> None:
    """A create-or-replace PUT (it documents 201) never answers 404: it creates what is missing."""
    missing = [
        _label(m, p)
        for m, p, op in operations(spec)
        if op.get("security")
        and any(x.get("in") == "path" for x in op.get("parameters", []))
        and "404" not in op["responses"]
        and not (m == "PUT" and "201" in op["responses"])
    ]
    assert missing == []


def test_successful_json_responses_have_a_schema(spec: dict[str, Any]) -> None:
    untyped = []
    for method, path, op in operations(spec):
        for status, response in op["responses"].items():
            json_body = response.get("content", {}).get("application/json")
            if status.startswith("2") and json_body is not None and not json_body.get("schema"):
                untyped.append((_label(method, path), status))
    assert untyped == []


def test_bearer_security_scheme_is_declared(spec: dict[str, Any]) -> None:
    schemes = spec["components"]["securitySchemes"]
    assert any(s.get("type") == "http" and s.get("scheme") == "bearer" for s in schemes.values())
    assert any(op.get("security") for _, p, op in operations(spec) if p == "/agents")


async def test_openapi_json_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "agent-runtime"


async def test_healthz_is_ok(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_is_ready_with_a_reachable_database(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


async def test_readyz_is_503_problem_when_the_database_goes_away(database_url: str, tmp_path: Path) -> None:
    async with running_app(make_settings(database_url, tmp_path)) as (app, client):
        healthy = app.state.container
        unreachable = create_engine(UNREACHABLE_DB)
        app.state.container = dataclasses.replace(healthy, engine=unreachable)
        try:
            response = await client.get("/readyz")
        finally:
            await unreachable.dispose()
            app.state.container = healthy
        assert response.status_code == 503
        assert response.headers["content-type"] == PROBLEM
        body = response.json()
        assert body["status"] == 503
        assert body["detail"] == "Database is unreachable"
        assert "127.0.0.1:1" not in response.text
        assert (await client.get("/readyz")).status_code == 200


async def test_service_starts_and_reports_unready_without_a_database(tmp_path: Path) -> None:
    async with running_app(make_settings(UNREACHABLE_DB, tmp_path)) as (_, client):
        assert (await client.get("/healthz")).status_code == 200
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert response.headers["content-type"] == PROBLEM
