"""Stream tokens: minted for a turn the caller may read, accepted only as `?access_token=` on that
turn's events route, for at most 60 s, with the tenant and owner checks of the caller."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.auth.principal import Principal
from app.auth.stream_token import STREAM_AUDIENCE, mint_stream_token
from app.container import Container
from tests.conftest import TokenFactory
from tests.turns.support import scripted_session


async def _finished_turn(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    session = await scripted_session(client, headers, {"text": "hello there"})
    response = await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers={**headers, "Accept": "application/json"}
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _token(client: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> str:
    response = await client.post(f"/turns/{turn_id}/stream-token", headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert 0 < body["expires_in"] <= 60
    return str(body["token"])


async def test_a_stream_token_follows_its_turn_without_a_header(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    turn = await _finished_turn(client, alice)
    token = await _token(client, alice, turn["id"])
    response = await client.get(f"/turns/{turn['id']}/events", params={"access_token": token})
    assert response.status_code == 200, response.text
    assert "event: turn.started" in response.text
    assert "event: turn.ended" in response.text
    resumed = await client.get(f"/turns/{turn['id']}/events", params={"access_token": token, "after": 1})
    assert "event: turn.started" not in resumed.text
    assert "event: turn.ended" in resumed.text


async def test_a_stream_token_is_refused_by_another_turn(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    mine, other = await _finished_turn(client, alice), await _finished_turn(client, alice)
    token = await _token(client, alice, mine["id"])
    response = await client.get(f"/turns/{other['id']}/events", params={"access_token": token})
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"


async def test_a_stream_token_is_refused_by_every_other_route(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    turn = await _finished_turn(client, alice)
    token = await _token(client, alice, turn["id"])
    session_id = turn["session_id"]
    concrete = {
        "{turn_id}": turn["id"], "{session_id}": session_id, "{agent_id}": str(uuid.uuid4()),
        "{approval_id}": str(uuid.uuid4()), "{version}": "1", "{webhook_id}": str(uuid.uuid4()),
        "{name}": "x", "{schedule_id}": str(uuid.uuid4()), "{namespace}": "x", "{key}": "x",
    }  # fmt: skip
    checked = 0
    for path, item in app.openapi()["paths"].items():
        if path == "/turns/{turn_id}/events":
            continue
        for method, operation in item.items():
            if not any(r.startswith("401") for r in operation.get("responses", {})):
                continue  # a public route (health, JWKS) needs no token at all
            url = path
            for placeholder, value in concrete.items():
                url = url.replace(placeholder, value)
            as_bearer = await client.request(method.upper(), url, headers={"Authorization": f"Bearer {token}"})
            as_query = await client.request(method.upper(), url, params={"access_token": token})
            assert as_bearer.status_code == 401, (method, path, as_bearer.text)
            assert as_query.status_code == 401, (method, path, as_query.text)
            checked += 1
    assert checked >= 20


async def test_a_stream_token_carries_the_tenant_and_owner_checks(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    turn = await _finished_turn(client, alice)
    bob = auth_headers(tenant, "bob")
    stranger = auth_headers(f"other-{tenant}", "alice")
    assert (await client.post(f"/turns/{turn['id']}/stream-token", headers=bob)).status_code == 404
    assert (await client.post(f"/turns/{turn['id']}/stream-token", headers=stranger)).status_code == 404
    admin = auth_headers(tenant, "root", roles=["admin"])
    token = await _token(client, admin, turn["id"])
    assert (await client.get(f"/turns/{turn['id']}/events", params={"access_token": token})).status_code == 200


async def test_a_forged_stream_token_for_another_tenant_finds_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    """Even a validly signed token of another tenant's caller reads the turn through the tenant filter."""
    turn = await _finished_turn(client, alice)
    container: Container = app.state.container
    assert container.signing is not None
    issuer = container.settings.signing.issuer
    outsider = Principal(sub="alice", tenant_id="someone-else")
    minted = mint_stream_token(container.signing, outsider, uuid.UUID(turn["id"]), issuer=issuer)
    response = await client.get(f"/turns/{turn['id']}/events", params={"access_token": minted.token})
    assert response.status_code == 404


@pytest.mark.parametrize("change", ["expired", "audience", "too_long", "garbage", "user_token"])
async def test_a_stale_or_foreign_token_is_refused_on_the_events_route(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str, change: str
) -> None:
    turn = await _finished_turn(client, alice)
    container: Container = app.state.container
    assert container.signing is not None
    issuer = container.settings.signing.issuer
    claims = {"sub": "alice", "tenant_id": tenant, "turn_id": turn["id"]}
    now = time.time()
    token = {
        "expired": lambda: container.signing.mint(  # type: ignore[union-attr]
            audience=STREAM_AUDIENCE, claims=claims, ttl_seconds=30, issuer=issuer, now=now - 120
        )[0],
        "audience": lambda: container.signing.mint(  # type: ignore[union-attr]
            audience="context-engine", claims=claims, ttl_seconds=30, issuer=issuer
        )[0],
        "too_long": lambda: container.signing.mint(  # type: ignore[union-attr]
            audience=STREAM_AUDIENCE, claims=claims, ttl_seconds=300, issuer=issuer
        )[0],
        "garbage": lambda: "not.a.token",
        "user_token": lambda: alice["Authorization"].removeprefix("Bearer "),
    }[change]()
    response = await client.get(f"/turns/{turn['id']}/events", params={"access_token": token})
    assert response.status_code == 401, response.text
