"""Which key a turn uses: named credential → credential named after the provider → environment,
with BYOK-only and base-URL checks (against the real database and the service's keyring)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.credentials.resolver import CredentialResolver, EnvironmentKey
from app.credentials.sealing import seal_key
from app.models import Credential
from app.providers.base import ProviderError
from tests.conftest import TokenFactory

ENV = {"openai": EnvironmentKey("sk-operator-env-key-0123456789", "https://proxy.example.test/v1")}
TEAM_KEY = "sk-team-credential-key-0123456789"
DEFAULT_KEY = "sk-default-credential-key-0123456"


@pytest.fixture
def admin(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


def resolver(app: FastAPI, allowed_hosts: list[str] | None = None) -> CredentialResolver:
    container = app.state.container
    return CredentialResolver(container.sql, container.secret_box, ENV, allowed_hosts or [])


async def store(client: httpx.AsyncClient, admin: dict[str, str], name: str, **body: Any) -> None:
    response = await client.put(f"/credentials/{name}", json=body, headers=admin)
    assert response.status_code in (200, 201), response.text


async def fails(app: FastAPI, tenant: str, model: dict[str, Any], **kwargs: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await resolver(app, **kwargs).resolve(tenant, model)
    return caught.value


async def test_the_named_credential_wins_then_the_one_named_after_the_provider_then_the_environment(
    app: FastAPI, client: httpx.AsyncClient, admin: dict[str, str], tenant: str
) -> None:
    assert (await resolver(app).resolve(tenant, {"provider": "openai"})).api_key == ENV["openai"].api_key

    await store(client, admin, "openai", provider="openai", api_key=DEFAULT_KEY)
    default = await resolver(app).resolve(tenant, {"provider": "openai"})
    assert (default.api_key, default.source) == (DEFAULT_KEY, "credential:openai")
    assert default.base_url == ENV["openai"].base_url

    await store(client, admin, "team", provider="openai", api_key=TEAM_KEY, base_url="https://8.8.4.4/v1")
    named = await resolver(app).resolve(tenant, {"provider": "openai", "credential": "team"})
    assert (named.api_key, named.base_url, named.source) == (TEAM_KEY, "https://8.8.4.4/v1", "credential:team")


async def test_a_named_credential_that_is_gone_never_falls_back(
    app: FastAPI, client: httpx.AsyncClient, admin: dict[str, str], tenant: str
) -> None:
    await store(client, admin, "openai", provider="openai", api_key=DEFAULT_KEY)

    error = await fails(app, tenant, {"provider": "openai", "credential": "deleted-one"})

    assert error.code == "provider_not_configured"
    assert "deleted-one" in error.message


async def test_byok_only_refuses_the_operator_key(
    app: FastAPI, client: httpx.AsyncClient, admin: dict[str, str], tenant: str
) -> None:
    await store(client, admin, "openai", provider="openai", api_key=DEFAULT_KEY)
    await client.patch("/credentials", json={"byok_only": True}, headers=admin)
    assert (await resolver(app).resolve(tenant, {"provider": "openai"})).api_key == DEFAULT_KEY

    await client.delete("/credentials/openai", headers=admin)
    error = await fails(app, tenant, {"provider": "openai"})

    assert error.code == "provider_not_configured"
    assert "byok_only" in error.message
    assert ENV["openai"].api_key not in error.message  # type: ignore[operator]


async def test_another_tenants_byok_only_leaves_this_tenant_on_the_operator_key(
    app: FastAPI, client: httpx.AsyncClient, auth_headers: TokenFactory, tenant: str
) -> None:
    other_admin = auth_headers(f"{tenant}-strict", "root", roles=["admin"])
    assert (await client.patch("/credentials", json={"byok_only": True}, headers=other_admin)).status_code == 200

    assert (await resolver(app).resolve(tenant, {"provider": "openai"})).source == "environment"
    assert (await fails(app, f"{tenant}-strict", {"provider": "openai"})).code == "provider_not_configured"


async def test_without_any_key_the_provider_is_not_configured(app: FastAPI, tenant: str) -> None:
    assert (await fails(app, tenant, {"provider": "gemini"})).code == "provider_not_configured"


async def test_a_credential_of_another_provider_is_refused(
    app: FastAPI, client: httpx.AsyncClient, admin: dict[str, str], tenant: str
) -> None:
    await store(client, admin, "g", provider="gemini", api_key="AIzaKEY-0123456789abcdefghij")

    error = await fails(app, tenant, {"provider": "openai", "credential": "g"})

    assert error.code == "provider_not_configured"
    assert "gemini" in error.message


async def test_another_tenants_credential_is_never_used(
    app: FastAPI, client: httpx.AsyncClient, auth_headers: TokenFactory, tenant: str
) -> None:
    other_admin = auth_headers(f"{tenant}-other", "root", roles=["admin"])
    await store(client, other_admin, "gemini", provider="gemini", api_key="AIzaOTHER-0123456789abcdefghi")

    assert (await fails(app, tenant, {"provider": "gemini"})).code == "provider_not_configured"


async def test_a_base_url_is_judged_again_at_every_turn(
    app: FastAPI, client: httpx.AsyncClient, admin: dict[str, str], tenant: str, sql: AsyncEngine
) -> None:
    """A row whose base_url now points inside (a planted row: the API refuses it) fails unless allowed;
    its ciphertext is bound to the old URL, so a changed URL does not decrypt either."""
    await store(client, admin, "openai", provider="openai", api_key=DEFAULT_KEY, base_url="https://8.8.8.8/v1")
    async with sql.begin() as conn:
        await conn.execute(
            update(Credential)
            .where(Credential.tenant_id == tenant, Credential.name == "openai")
            .values(base_url="http://127.0.0.1:9/v1")
        )

    blocked = await fails(app, tenant, {"provider": "openai"})
    tampered = await fails(app, tenant, {"provider": "openai"}, allowed_hosts=["127.0.0.1"])

    assert blocked.code == "provider_not_configured"
    assert "refused" in blocked.message
    assert tampered.code == "provider_not_configured"
    assert "cannot be decrypted" in tampered.message
    assert DEFAULT_KEY not in blocked.message + tampered.message


async def test_a_stored_key_that_is_not_printable_ascii_fails_the_turn_as_not_configured(
    app: FastAPI, client: httpx.AsyncClient, admin: dict[str, str], tenant: str, sql: AsyncEngine
) -> None:
    """A row stored before keys were validated (the API now refuses it): the turn fails with a
    precise code, not an encoding error where the key meets an HTTP header."""
    await store(client, admin, "openai", provider="openai", api_key=DEFAULT_KEY)
    sealed = seal_key(
        await app.state.container.secret_box.current(), "sk-proj-…", tenant_id=tenant, name="openai",
        provider="openai", base_url=None,
    )  # fmt: skip
    async with sql.begin() as conn:
        await conn.execute(
            update(Credential)
            .where(Credential.tenant_id == tenant, Credential.name == "openai")
            .values(key_id=sealed.key_id, sealed_key=sealed.blob)
        )

    error = await fails(app, tenant, {"provider": "openai"})

    assert error.code == "provider_not_configured"
    assert "not printable ASCII" in error.message
    assert "…" not in error.message
