from __future__ import annotations

import httpx
import pytest

from tests.conftest import TokenFactory
from tests.factories import create_agent


@pytest.fixture
def api(any_backend: httpx.AsyncClient) -> httpx.AsyncClient:
    return any_backend


async def test_put_creates_then_replaces_and_get_reads_it_back(api: httpx.AsyncClient, alice: dict[str, str]) -> None:
    created = await api.put("/memory/prefs/editor", json={"value": {"name": "vim", "tabs": 4}}, headers=alice)
    assert created.status_code == 201
    assert created.json()["scope"] == "user:alice"
    replaced = await api.put("/memory/prefs/editor", json={"value": "emacs"}, headers=alice)
    assert replaced.status_code == 200
    read = await api.get("/memory/prefs/editor", headers=alice)
    assert read.json()["value"] == "emacs"


async def test_search_finds_items_by_the_words_of_their_values(api: httpx.AsyncClient, alice: dict[str, str]) -> None:
    await api.put("/memory/facts/city", json={"value": {"home": "Lives in Berlin near the river"}}, headers=alice)
    await api.put("/memory/facts/pet", json={"value": "Has a cat called Mio"}, headers=alice)
    await api.put("/memory/other/city", json={"value": "Berlin"}, headers=alice)
    found = await api.get("/memory/facts", params={"q": "berlin river"}, headers=alice)
    assert [item["key"] for item in found.json()["items"]] == ["city"]
    assert (await api.get("/memory/facts", params={"q": "cat"}, headers=alice)).json()["items"][0]["key"] == "pet"
    assert (await api.get("/memory/facts", params={"q": "london"}, headers=alice)).json()["items"] == []
    assert (await api.get("/memory/facts", params={"q": '"); drop'}, headers=alice)).status_code == 200


async def test_a_users_memory_is_never_readable_by_another_user_or_tenant(
    api: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    await api.put("/memory/secrets/pin", json={"value": "1234"}, headers=alice)
    bob = auth_headers(tenant, "bob")
    admin = auth_headers(tenant, "root", roles=["admin"])
    stranger = auth_headers("another-tenant", "alice")
    for headers in (bob, admin, stranger):
        assert (await api.get("/memory/secrets/pin", headers=headers)).status_code == 404
        listed = await api.get("/memory/secrets", headers=headers)
        assert listed.json()["items"] == []
        assert (await api.get("/memory/secrets", params={"q": "1234"}, headers=headers)).json()["items"] == []
        assert (await api.delete("/memory/secrets/pin", headers=headers)).status_code == 404
    assert (await api.get("/memory/secrets/pin", headers=alice)).json()["value"] == "1234"


async def test_agent_memory_is_shared_read_by_users_and_written_by_admins(
    api: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(api, alice)
    admin = auth_headers(tenant, "root", roles=["admin"])
    scope = {"agent_id": agent["id"]}
    assert (await api.put("/memory/kb/faq", params=scope, json={"value": "x"}, headers=alice)).status_code == 403
    assert (await api.put("/memory/kb/faq", params=scope, json={"value": "ask"}, headers=admin)).status_code == 201
    read = await api.get("/memory/kb/faq", params=scope, headers=auth_headers(tenant, "bob"))
    assert read.json()["scope"] == f"agent:{agent['id']}"
    other = auth_headers("another-tenant", "root", roles=["admin"])
    assert (await api.get("/memory/kb/faq", params=scope, headers=other)).status_code == 404


async def test_listing_pages_by_key(api: httpx.AsyncClient, alice: dict[str, str]) -> None:
    for key in ("c", "a", "b"):
        await api.put(f"/memory/abc/{key}", json={"value": key}, headers=alice)
    first = (await api.get("/memory/abc", params={"limit": 2}, headers=alice)).json()
    assert [i["key"] for i in first["items"]] == ["a", "b"]
    second = (await api.get("/memory/abc", params={"limit": 2, "cursor": first["next_cursor"]}, headers=alice)).json()
    assert [i["key"] for i in second["items"]] == ["c"]
    assert second["next_cursor"] is None


@pytest.mark.parametrize(
    "path",
    ["/memory/..%2Fetc/passwd", "/memory/Upper/key", "/memory/a.b/key", "/memory/ns/..", "/memory/ns/%00x"],
)
async def test_namespaces_and_keys_with_path_tricks_are_refused(
    client: httpx.AsyncClient, alice: dict[str, str], path: str
) -> None:
    response = await client.put(path, json={"value": 1}, headers=alice)
    assert response.status_code in (404, 422)
    assert response.headers["content-type"] == "application/problem+json"


async def test_a_value_over_64_kib_is_a_422_naming_the_field(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.put("/memory/big/blob", json={"value": "x" * 70_000}, headers=alice)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "value"]
    assert (await client.get("/memory/big/blob", headers=alice)).status_code == 404


async def test_an_unknown_agent_scope_is_404(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.get(
        "/memory/kb", params={"agent_id": "00000000-0000-0000-0000-000000000000"}, headers=alice
    )
    assert response.status_code == 404
