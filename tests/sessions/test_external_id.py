"""`POST /sessions` with an `external_id`: get-or-create per (tenant, owner, agent, external_id)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Session
from tests.conftest import TokenFactory
from tests.factories import create_agent


async def _post(client: httpx.AsyncClient, headers: dict[str, str], agent_id: str, **body: object) -> httpx.Response:
    return await client.post("/sessions", json={"agent_id": agent_id, **body}, headers=headers)


async def test_first_send_creates_and_the_next_gets_the_same_session(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    created = await _post(client, alice, agent["id"], external_id="chat-42", metadata={"channel": "web"})
    assert created.status_code == 201, created.text
    assert created.json()["external_id"] == "chat-42"
    again = await _post(client, alice, agent["id"], external_id="chat-42")
    assert again.status_code == 200, again.text
    assert again.json()["id"] == created.json()["id"]
    assert again.json()["metadata"] == {"channel": "web"}
    assert again.headers["location"] == f"/sessions/{created.json()['id']}"


async def test_the_key_is_owner_agent_and_id(
    client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    alice, bob = auth_headers(tenant, "alice"), auth_headers(tenant, "bob")
    agent, other_agent = await create_agent(client, alice), await create_agent(client, alice, name="other")
    first = (await _post(client, alice, agent["id"], external_id="x")).json()["id"]
    for headers, agent_id, external_id in ((bob, agent["id"], "x"), (alice, other_agent["id"], "x"),
                                           (alice, agent["id"], "y")):  # fmt: skip
        response = await _post(client, headers, agent_id, external_id=external_id)
        assert response.status_code == 201
        assert response.json()["id"] != first
    without = [await _post(client, alice, agent["id"]) for _ in range(2)]
    assert [r.status_code for r in without] == [201, 201]
    assert without[0].json()["external_id"] is None


async def test_another_tenant_never_gets_the_session(
    client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    await _post(client, alice, agent["id"], external_id="shared-id")
    stranger = auth_headers("another-tenant-" + agent["id"][:8], "alice")
    assert (await _post(client, stranger, agent["id"], external_id="shared-id")).status_code == 404


async def test_concurrent_first_sends_get_one_session(
    client: httpx.AsyncClient, alice: dict[str, str], sql: AsyncEngine
) -> None:
    agent = await create_agent(client, alice)
    responses = await asyncio.gather(*(_post(client, alice, agent["id"], external_id="race") for _ in range(12)))
    assert sorted(r.status_code for r in responses) == [200] * 11 + [201]
    assert len({r.json()["id"] for r in responses}) == 1
    async with sql.connect() as conn:
        stored = await conn.scalar(select(func.count()).select_from(Session).where(Session.agent_id == agent["id"]))
    assert stored == 1


async def test_an_archived_agent_still_returns_the_existing_session_but_creates_none(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    known = (await _post(client, alice, agent["id"], external_id="old")).json()
    assert (await client.delete(f"/agents/{agent['id']}", headers=alice)).status_code == 204
    again = await _post(client, alice, agent["id"], external_id="old")
    assert again.status_code == 200
    assert again.json()["id"] == known["id"]
    assert (await _post(client, alice, agent["id"], external_id="new")).status_code == 409


@pytest.mark.parametrize(
    ("external_id", "why"),
    [("x" * 257, "too long"), ("line\nbreak", "control"), ("nul\x00", "control"), ("tab\there", "control"),
     ("c1\x85", "control"), ("", "empty")],
)  # fmt: skip
async def test_bad_external_ids_are_422_and_create_nothing(
    client: httpx.AsyncClient, alice: dict[str, str], sql: AsyncEngine, external_id: str, why: str
) -> None:
    agent = await create_agent(client, alice)
    response = await _post(client, alice, agent["id"], external_id=external_id)
    assert response.status_code == 422, why
    problem = response.json()
    assert problem["errors"][0]["loc"] == ["body", "external_id"]
    assert external_id not in response.text or not external_id
    async with sql.connect() as conn:
        count = await conn.scalar(select(func.count()).select_from(Session).where(Session.agent_id == agent["id"]))
    assert count == 0


async def test_an_id_of_256_characters_is_accepted(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    response = await _post(client, alice, agent["id"], external_id="é" * 256)
    assert response.status_code == 201
    assert response.json()["external_id"] == "é" * 256
