from __future__ import annotations

import httpx

from tests.conftest import TokenFactory
from tests.factories import create_agent, scripted_config


async def test_create_agent_starts_at_version_one(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    assert agent["version"] == 1
    assert agent["config"]["model"]["provider"] == "scripted"
    assert agent["config"]["limits"] == {}  # unset: the service defaults and the tenant ceilings apply per turn


async def test_patch_config_adds_version_and_keeps_old(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    new_config = scripted_config({"text": "v2"}, system_prompt="second")
    response = await client.patch(f"/agents/{agent['id']}", json={"config": new_config}, headers=alice)
    assert response.status_code == 200
    assert response.json()["version"] == 2
    v1 = await client.get(f"/agents/{agent['id']}/versions/1", headers=alice)
    assert v1.json()["config"]["system_prompt"] == "You are a test agent."
    versions = await client.get(f"/agents/{agent['id']}/versions", headers=alice)
    assert [v["version"] for v in versions.json()["items"]] == [1, 2]


async def test_patch_name_only_keeps_version(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    response = await client.patch(f"/agents/{agent['id']}", json={"name": "renamed"}, headers=alice)
    assert response.json()["version"] == 1
    assert response.json()["name"] == "renamed"


async def test_list_paginates_with_cursor(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    ids = [(await create_agent(client, alice, name=f"a{i}"))["id"] for i in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await client.get("/agents", params=params, headers=alice)).json()
        seen += [a["id"] for a in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))


async def test_bad_cursor_is_400_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.get("/agents", params={"cursor": "!!"}, headers=alice)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"


async def test_archived_agent_is_hidden_from_list_and_refuses_sessions(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    assert (await client.delete(f"/agents/{agent['id']}", headers=alice)).status_code == 204
    listed = (await client.get("/agents", headers=alice)).json()["items"]
    assert agent["id"] not in [a["id"] for a in listed]
    response = await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)
    assert response.status_code == 409


async def test_other_tenant_gets_404(
    client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    mallory = auth_headers("other-tenant", "alice", roles=["admin"])
    for method, path in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("GET", "/versions"), ("GET", "/versions/1")]:
        kwargs = {"json": {"name": "x"}} if method == "PATCH" else {}
        response = await client.request(method, f"/agents/{agent['id']}{path}", headers=mallory, **kwargs)
        assert response.status_code == 404, (method, path)
    assert agent["id"] not in [a["id"] for a in (await client.get("/agents", headers=mallory)).json()["items"]]


async def test_unknown_version_is_404(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    response = await client.get(f"/agents/{agent['id']}/versions/9", headers=alice)
    assert response.status_code == 404
    assert response.json()["detail"].endswith("no version 9")
