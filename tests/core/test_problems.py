"""Every error is RFC 9457 application/problem+json, including the ones FastAPI produces itself."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.settings import DbSettings, HttpSettings
from tests.conftest import make_settings, running_app
from tests.factories import scripted_config

LIMIT = 4096


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["type"].startswith("https://")
    assert isinstance(body["title"], str)
    assert body["title"]
    assert isinstance(body["detail"], str)
    assert body["detail"]
    return body


async def test_unknown_route_is_404_problem(client: httpx.AsyncClient) -> None:
    body = assert_problem(await client.get("/no/such/route"), 404)
    assert body["title"] == "Not Found"
    assert body["type"].endswith("/not-found")
    assert body["detail"] == "No route for GET /no/such/route"
    assert body["instance"] == "/no/such/route"


async def test_wrong_method_is_405_problem_with_allow(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.put("/agents", headers=alice, json={})
    body = assert_problem(response, 405)
    assert body["title"] == "Method Not Allowed"
    assert body["type"].endswith("/method-not-allowed")
    assert response.headers["allow"] == "GET, POST"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("OPTIONS", "/agents", "GET, POST"),
        ("OPTIONS", f"/agents/{uuid.uuid4()}", "DELETE, GET, PATCH"),
        ("PUT", f"/sessions/{uuid.uuid4()}/turns", "GET, POST"),
        ("OPTIONS", "/policies", "GET, PUT"),
        ("POST", f"/approvals/{uuid.uuid4()}/x", None),
    ],
)
async def test_allow_names_every_method_any_route_serves_at_the_path(
    client: httpx.AsyncClient, alice: dict[str, str], method: str, path: str, allow: str | None
) -> None:
    response = await client.request(method, path, headers=alice)
    if allow is None:
        assert_problem(response, 404)
        return
    assert_problem(response, 405)
    assert response.headers["allow"] == allow


async def test_validation_error_lists_the_offending_fields(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    config = scripted_config(limits={"max_loops": 0})
    response = await client.post("/agents", json={"name": "", "config": config, "colour": "red"}, headers=alice)
    body = assert_problem(response, 422)
    assert body["type"].endswith("/validation-error")
    locations = [e["loc"] for e in body["errors"]]
    assert ["body", "name"] in locations
    assert ["body", "config", "limits", "max_loops"] in locations
    assert ["body", "colour"] in locations
    assert all(set(e) == {"loc", "msg", "type"} for e in body["errors"])
    assert "body.name" in body["detail"]


async def test_validation_error_does_not_echo_input(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    secret = "sk-do-not-echo-0123456789"
    response = await client.post("/agents", json={"name": 12, "config": secret}, headers=alice)
    assert_problem(response, 422)
    assert secret not in response.text


async def test_malformed_json_is_422_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    headers = {**alice, "Content-Type": "application/json"}
    body = assert_problem(await client.post("/agents", content=b'{"name": ', headers=headers), 422)
    assert body["errors"]


async def test_bad_query_parameter_is_422_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    body = assert_problem(await client.get("/agents", params={"limit": "many"}, headers=alice), 422)
    assert body["errors"][0]["loc"] == ["query", "limit"]


@pytest.fixture
async def small_app(database_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(database_url, tmp_path, http=HttpSettings(max_body_bytes=LIMIT))
    async with running_app(settings) as (_, client):
        yield client


def _agent_body(padding: int) -> dict[str, Any]:
    return {"name": "big", "description": "x" * padding, "config": scripted_config()}


async def test_body_over_the_limit_with_content_length_is_413(
    small_app: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    response = await small_app.post("/agents", json=_agent_body(LIMIT), headers=alice)
    assert int(response.request.headers["content-length"]) > LIMIT
    body = assert_problem(response, 413)
    assert body["type"].endswith("/payload-too-large")
    assert str(LIMIT) in body["detail"]


async def test_chunked_body_over_the_limit_is_413(small_app: httpx.AsyncClient, alice: dict[str, str]) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": "big", "description": "'
        for _ in range(8):
            yield b"y" * 1000
        yield b'"}'

    headers = {**alice, "Content-Type": "application/json"}
    response = await small_app.post("/agents", content=chunks(), headers=headers)
    assert "content-length" not in response.request.headers
    assert_problem(response, 413)


async def test_oversized_body_is_refused_before_authentication(small_app: httpx.AsyncClient) -> None:
    assert_problem(await small_app.post("/agents", json=_agent_body(LIMIT)), 413)


async def test_body_under_the_limit_is_processed(small_app: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await small_app.post("/agents", json=_agent_body(LIMIT // 2), headers=alice)
    assert response.status_code == 201, response.text


async def test_chunked_body_under_the_limit_is_processed(small_app: httpx.AsyncClient, alice: dict[str, str]) -> None:
    payload = json.dumps(_agent_body(LIMIT // 2)).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 500):
            yield payload[start : start + 500]

    headers = {**alice, "Content-Type": "application/json"}
    response = await small_app.post("/agents", content=chunks(), headers=headers)
    assert response.status_code == 201, response.text


async def test_an_exhausted_connection_pool_answers_503_with_retry_after(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    db = DbSettings(url=database_url, api_pool_size=1, max_overflow=0, pool_timeout_seconds=0.2)
    async with running_app(make_settings(database_url, tmp_path, db=db)) as (app, client):
        held = await app.state.container.engine.connect()
        try:
            await held.execute(text("SELECT 1"))
            response = await client.get("/agents", headers=alice)
        finally:
            await held.close()
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "1"


async def test_an_exhausted_hot_path_pool_answers_503_with_retry_after(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    """The turn hot path runs on an asyncpg pool of its own (app/core/sql.py): PoolExhausted, same answer."""
    db = DbSettings(url=database_url, pool_size=1, max_overflow=5, pool_timeout_seconds=0.2)
    path = f"/sessions/{uuid.uuid4()}/turns"
    async with running_app(make_settings(database_url, tmp_path, db=db)) as (app, client):
        hot = app.state.container.turns.store.sql
        async with hot.transaction():
            response = await client.post(path, json={"input": "hi"}, headers=alice)
        after = await client.post(path, json={"input": "hi"}, headers=alice)
    body = assert_problem(response, 503)
    assert body["type"].endswith("/unavailable")
    assert response.headers["retry-after"] == "1"
    assert_problem(after, 404)  # the same request, once the connection is free
