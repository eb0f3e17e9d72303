"""/webhooks: admin CRUD, the secret shown once and stored sealed, SSRF guard at creation, tenancy."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import WebhookSettings
from app.webhooks.signing import new_secret
from tests.conftest import TokenFactory, make_settings, running_app

HOOK = {"url": "https://hooks.example.com/agent-runtime", "events": ["turn.ended"]}


async def test_create_list_delete_and_the_secret_only_once(
    hooks_client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, sql: AsyncEngine
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    created = await hooks_client.post(
        "/webhooks", json={**HOOK, "events": ["turn.ended", "approval.required"]}, headers=admin
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["secret"].startswith("whsec_")
    assert created.headers["location"] == f"/webhooks/{body['id']}"
    assert (body["url"], body["events"], body["created_by"]) == (
        HOOK["url"],
        ["turn.ended", "approval.required"],
        "root",
    )

    listed = (await hooks_client.get("/webhooks", headers=admin)).json()
    assert [w["id"] for w in listed["items"]] == [body["id"]]
    assert "secret" not in listed["items"][0]
    async with sql.connect() as conn:
        stored = (
            (await conn.execute(text("SELECT * FROM webhooks WHERE id = :id"), {"id": body["id"]})).mappings().one()
        )
    assert body["secret"] not in str(dict(stored))
    assert body["secret"].removeprefix("whsec_").encode() not in bytes(stored["secret_sealed"])

    deliveries = await hooks_client.get(f"/webhooks/{body['id']}/deliveries", headers=admin)
    assert deliveries.json() == {"items": [], "next_cursor": None}
    assert (await hooks_client.delete(f"/webhooks/{body['id']}", headers=admin)).status_code == 204
    assert (await hooks_client.delete(f"/webhooks/{body['id']}", headers=admin)).status_code == 404
    assert (await hooks_client.get("/webhooks", headers=admin)).json()["items"] == []


async def test_a_supplied_secret_is_kept_and_a_malformed_one_refused(
    hooks_client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    secret = new_secret()
    kept = await hooks_client.post("/webhooks", json={**HOOK, "secret": secret}, headers=admin)
    assert kept.json()["secret"] == secret
    for bad in ("plain-text", "whsec_!!!", "whsec_" + "QUFB"):
        refused = await hooks_client.post("/webhooks", json={**HOOK, "secret": bad}, headers=admin)
        assert refused.status_code == 422, bad
        assert refused.headers["content-type"] == "application/problem+json"
        assert bad not in refused.text


async def test_bad_subscriptions_are_422(client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    for body in (
        {**HOOK, "events": []},
        {**HOOK, "events": ["Turn Ended"]},
        {**HOOK, "url": "ftp://hooks.example.com/x"},
        {**HOOK, "url": "http://127.0.0.1:9/x"},
        {**HOOK, "url": "http://localhost/x"},
        {**HOOK, "url": "http://169.254.169.254/latest"},
        {**HOOK, "url": "http://[::1]/x"},
        {**HOOK, "extra": 1},
    ):
        response = await client.post("/webhooks", json=body, headers=admin)
        assert response.status_code == 422, body
    assert (await client.get("/webhooks", headers=admin)).json()["items"] == []


async def test_an_allowed_host_may_be_private(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    settings = make_settings(database_url, tmp_path, webhooks=WebhookSettings(allowed_hosts=["127.0.0.1"]))
    admin = auth_headers(tenant, "root", roles=["admin"])
    async with running_app(settings) as (_, client):
        ok = await client.post("/webhooks", json={**HOOK, "url": "http://127.0.0.1:9/x"}, headers=admin)
        assert ok.status_code == 201
        still = await client.post("/webhooks", json={**HOOK, "url": "http://10.0.0.1/x"}, headers=admin)
        assert still.status_code == 422


async def test_webhooks_need_admin_and_stay_in_their_tenant(
    hooks_client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    user = auth_headers(tenant, "alice")
    other = auth_headers(f"other-{uuid.uuid4().hex[:6]}", "root", roles=["admin"])
    assert (await hooks_client.post("/webhooks", json=HOOK, headers=user)).status_code == 403
    assert (await hooks_client.get("/webhooks", headers=user)).status_code == 403
    hook = (await hooks_client.post("/webhooks", json=HOOK, headers=admin)).json()
    assert (await hooks_client.get("/webhooks", headers=other)).json()["items"] == []
    assert (await hooks_client.get(f"/webhooks/{hook['id']}/deliveries", headers=other)).status_code == 404
    assert (await hooks_client.delete(f"/webhooks/{hook['id']}", headers=other)).status_code == 404
    assert (await hooks_client.get(f"/webhooks/{hook['id']}/deliveries", headers=admin)).status_code == 200
