"""`/credentials`: admin-only, write-only, tenant-scoped, base URLs judged before they are stored."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Credential
from tests.conftest import TokenFactory

KEY = "sk-proj-STORED-KEY-abcdefghijklmnop-1234"
PUBLIC_BASE = "https://8.8.8.8/v1"


@pytest.fixture
def admin(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


async def put(client: httpx.AsyncClient, headers: dict[str, str], name: str, **body: object) -> httpx.Response:
    return await client.put(f"/credentials/{name}", json=body, headers=headers)


async def test_a_stored_key_is_never_read_back_only_its_provider_last4_and_fingerprint(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    created = await put(client, admin, "openai", provider="openai", api_key=KEY, base_url=PUBLIC_BASE)

    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/credentials/openai"
    view = created.json()
    assert view["provider"] == "openai"
    assert view["base_url"] == PUBLIC_BASE
    assert view["last4"] == KEY[-4:]
    assert view["fingerprint"] == "sha256:" + hashlib.sha256(KEY.encode()).hexdigest()[:16]
    assert "api_key" not in view
    assert KEY not in created.text
    listing = await client.get("/credentials", headers=admin)
    assert listing.status_code == 200
    assert [item["name"] for item in listing.json()["items"]] == ["openai"]
    assert listing.json()["byok_only"] is False
    assert KEY not in listing.text


async def test_put_replaces_and_delete_removes(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    await put(client, admin, "team-gemini", provider="gemini", api_key="AIzaFIRST-key-0123456789abcdef")
    replaced = await put(client, admin, "team-gemini", provider="gemini", api_key="AIzaSECOND-key-0123456789abcd")

    assert replaced.status_code == 200
    assert replaced.json()["last4"] == "abcd"
    assert (await client.delete("/credentials/team-gemini", headers=admin)).status_code == 204
    assert (await client.delete("/credentials/team-gemini", headers=admin)).status_code == 404
    assert (await client.get("/credentials", headers=admin)).json()["items"] == []


async def test_a_short_placeholder_key_shows_no_last4(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    stored = await put(client, admin, "ollama", provider="openai", api_key="ollama", base_url=PUBLIC_BASE)

    assert stored.json()["last4"] is None


async def test_the_database_holds_only_ciphertext(
    client: httpx.AsyncClient, admin: dict[str, str], tenant: str, sql: AsyncEngine, app: object
) -> None:
    await put(client, admin, "anthropic", provider="anthropic", api_key=KEY)

    async with sql.connect() as conn:
        row = (await conn.execute(select(Credential).where(Credential.tenant_id == tenant))).one()
    assert KEY.encode() not in row.sealed_key
    assert KEY not in repr(tuple(row))
    assert row.key_id == app.state.container.secret_box.keyring.current_key_id  # type: ignore[attr-defined]


async def test_only_admins_manage_credentials(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    assert (await client.get("/credentials", headers=alice)).status_code == 403
    assert (await put(client, alice, "openai", provider="openai", api_key=KEY)).status_code == 403
    assert (await client.delete("/credentials/openai", headers=alice)).status_code == 403
    assert (await client.patch("/credentials", json={"byok_only": True}, headers=alice)).status_code == 403


async def test_another_tenants_credentials_are_invisible(
    client: httpx.AsyncClient, admin: dict[str, str], auth_headers: TokenFactory
) -> None:
    await put(client, admin, "openai", provider="openai", api_key=KEY)
    other = auth_headers("other-tenant-creds", "eve", roles=["admin"])

    assert (await client.get("/credentials", headers=other)).json()["items"] == []
    assert (await client.delete("/credentials/openai", headers=other)).status_code == 404
    assert [i["name"] for i in (await client.get("/credentials", headers=admin)).json()["items"]] == ["openai"]


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:11434/v1", "http://10.1.2.3/v1", "http://169.254.169.254/latest", "http://[::1]/v1"]
)
async def test_a_base_url_inside_the_service_network_is_refused(
    client: httpx.AsyncClient, admin: dict[str, str], base_url: str
) -> None:
    refused = await put(client, admin, "openai", provider="openai", api_key=KEY, base_url=base_url)

    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["errors"][0]["loc"] == ["body", "base_url"]
    assert KEY not in refused.text
    assert (await client.get("/credentials", headers=admin)).json()["items"] == []


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("Upper", {"provider": "openai", "api_key": KEY}),
        ("openai", {"provider": "mistral", "api_key": KEY}),
        ("openai", {"provider": "openai", "api_key": ""}),
        ("openai", {"provider": "openai", "api_key": KEY, "base_url": "ftp://x"}),
        ("openai", {"provider": "openai", "api_key": KEY, "extra": 1}),
    ],
)
async def test_invalid_credentials_are_422_and_never_echo_the_key(
    client: httpx.AsyncClient, admin: dict[str, str], name: str, body: dict[str, object]
) -> None:
    refused = await client.put(f"/credentials/{name}", json=body, headers=admin)

    assert refused.status_code == 422
    assert KEY not in refused.text


async def test_byok_only_is_a_tenant_setting(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    turned_on = await client.patch("/credentials", json={"byok_only": True}, headers=admin)

    assert turned_on.status_code == 200
    assert turned_on.json()["byok_only"] is True
    assert (await client.get("/credentials", headers=admin)).json()["byok_only"] is True
    assert (await client.patch("/credentials", json={"byok_only": False}, headers=admin)).json()["byok_only"] is False
