"""Sessions: pinned to one agent version, owner-or-admin access, tenant isolation."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn


async def test_session_snapshots_the_current_version(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    response = await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)
    assert response.status_code == 201
    session = response.json()
    assert response.headers["location"] == f"/sessions/{session['id']}"
    assert session["agent_id"] == agent["id"]
    assert session["agent_version"] == 1
    assert session["snapshot"] == agent["config"]
    assert session["status"] == "open"
    assert session["owner"] == "alice"
    assert session["metadata"] == {}
    assert session["closed_at"] is None


async def test_session_on_an_old_version_snapshots_that_version(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    v2_config = scripted_config({"text": "second"}, system_prompt="Version two.")
    patched = await client.patch(f"/agents/{agent['id']}", json={"config": v2_config}, headers=alice)
    assert patched.json()["version"] == 2

    on_v1 = await create_session(client, alice, agent["id"], agent_version=1)
    v1 = (await client.get(f"/agents/{agent['id']}/versions/1", headers=alice)).json()
    assert on_v1["agent_version"] == 1
    assert on_v1["snapshot"] == v1["config"]
    assert on_v1["snapshot"]["system_prompt"] == "You are a test agent."

    current = await create_session(client, alice, agent["id"])
    assert current["agent_version"] == 2
    assert current["snapshot"]["system_prompt"] == "Version two."


async def test_snapshot_does_not_follow_later_edits(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    await client.patch(f"/agents/{agent['id']}", json={"config": scripted_config(system_prompt="new")}, headers=alice)
    reread = (await client.get(f"/sessions/{session['id']}", headers=alice)).json()
    assert reread["agent_version"] == 1
    assert reread["snapshot"] == session["snapshot"]


async def test_unknown_agent_is_404(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.post("/sessions", json={"agent_id": str(uuid.uuid4())}, headers=alice)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_unknown_version_is_404(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    response = await client.post("/sessions", json={"agent_id": agent["id"], "agent_version": 7}, headers=alice)
    assert response.status_code == 404
    assert response.json()["detail"].endswith("no version 7")


async def test_another_tenants_agent_is_404(
    client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    mallory = auth_headers(f"other-{uuid.uuid4().hex[:6]}", "alice", roles=["admin"])
    response = await client.post("/sessions", json={"agent_id": agent["id"]}, headers=mallory)
    assert response.status_code == 404


async def test_metadata_is_stored(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    metadata = {"ticket": "OPS-12", "nested": {"tags": ["a", "b"], "n": 3}}
    session = await create_session(client, alice, agent["id"], metadata=metadata)
    assert session["metadata"] == metadata
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["metadata"] == metadata


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"agent_id": "not-a-uuid"}, "agent_id"),
        ({}, "agent_id"),
        ({"agent_id": "00000000-0000-0000-0000-000000000000", "agent_version": 0}, "agent_version"),
        ({"agent_id": "00000000-0000-0000-0000-000000000000", "agent_version": "two"}, "agent_version"),
        ({"agent_id": "00000000-0000-0000-0000-000000000000", "metadata": ["x"]}, "metadata"),
        ({"agent_id": "00000000-0000-0000-0000-000000000000", "owner": "bob"}, "owner"),
    ],
    ids=["bad-uuid", "missing", "version-zero", "version-str", "metadata-list", "extra-field"],
)
async def test_wrong_types_are_422_naming_the_field(
    client: httpx.AsyncClient, alice: dict[str, str], body: dict[str, object], field: str
) -> None:
    response = await client.post("/sessions", json=body, headers=alice)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert ["body", field] in [e["loc"] for e in response.json()["errors"]]


async def test_malformed_session_id_is_422(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.get("/sessions/not-a-uuid", headers=alice)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["path", "session_id"]


async def test_another_tenants_session_is_404_everywhere(
    client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    mallory = auth_headers(f"other-{uuid.uuid4().hex[:6]}", "alice", roles=["admin"])
    for method, suffix in [("GET", ""), ("DELETE", ""), ("GET", "/messages")]:
        response = await client.request(method, f"/sessions/{session['id']}{suffix}", headers=mallory)
        assert response.status_code == 404, (method, suffix)
        assert response.headers["content-type"] == "application/problem+json"
    assert (await client.get("/sessions", headers=mallory)).json()["items"] == []
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["status"] == "open"


async def test_another_user_of_the_tenant_gets_404(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    bob = auth_headers(tenant, "bob")
    for method, suffix in [("GET", ""), ("DELETE", ""), ("GET", "/messages")]:
        response = await client.request(method, f"/sessions/{session['id']}{suffix}", headers=bob)
        assert response.status_code == 404, (method, suffix)
    assert (await client.get("/sessions", headers=bob)).json()["items"] == []
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["status"] == "open"


async def test_tenant_admin_sees_and_closes_other_users_sessions(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    admin = auth_headers(tenant, "root", roles=["admin"])
    read = await client.get(f"/sessions/{session['id']}", headers=admin)
    assert read.status_code == 200
    assert read.json()["owner"] == "alice"
    assert session["id"] in [s["id"] for s in (await client.get("/sessions", headers=admin)).json()["items"]]
    assert (await client.get(f"/sessions/{session['id']}/messages", headers=admin)).status_code == 200
    assert (await client.delete(f"/sessions/{session['id']}", headers=admin)).status_code == 204
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["status"] == "closed"


async def test_list_shows_only_own_sessions_and_filters_by_agent(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    first = await create_agent(client, alice, name="first")
    second = await create_agent(client, alice, name="second")
    a1 = await create_session(client, alice, first["id"])
    a2 = await create_session(client, alice, second["id"])
    bob = auth_headers(tenant, "bob")
    b1 = await create_session(client, bob, first["id"])

    mine = (await client.get("/sessions", headers=alice)).json()
    assert [s["id"] for s in mine["items"]] == [a2["id"], a1["id"]]
    assert mine["next_cursor"] is None
    by_agent = (await client.get("/sessions", params={"agent_id": first["id"]}, headers=alice)).json()
    assert [s["id"] for s in by_agent["items"]] == [a1["id"]]
    assert [s["id"] for s in (await client.get("/sessions", headers=bob)).json()["items"]] == [b1["id"]]

    admin = auth_headers(tenant, "root", roles=["admin"])
    everyone = (await client.get("/sessions", params={"agent_id": first["id"]}, headers=admin)).json()
    assert {s["id"] for s in everyone["items"]} == {a1["id"], b1["id"]}


async def test_list_paginates_with_cursor(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    ids = [(await create_session(client, alice, agent["id"]))["id"] for _ in range(5)]
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await client.get("/sessions", params=params, headers=alice)).json()
        assert len(page["items"]) <= 2
        seen += [s["id"] for s in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))


@pytest.mark.parametrize("params", [{"cursor": "%%%"}, {"limit": 0}, {"limit": 10_000}, {"agent_id": "x"}])
async def test_bad_list_parameters_are_problems(
    client: httpx.AsyncClient, alice: dict[str, str], params: dict[str, object]
) -> None:
    response = await client.get("/sessions", params=params, headers=alice)
    assert response.status_code in (400, 422)
    assert response.headers["content-type"] == "application/problem+json"


async def test_close_is_204_and_idempotent(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    first = await client.delete(f"/sessions/{session['id']}", headers=alice)
    assert first.status_code == 204
    assert first.content == b""
    closed = (await client.get(f"/sessions/{session['id']}", headers=alice)).json()
    assert closed["status"] == "closed"
    assert closed["closed_at"] is not None
    assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
    again = (await client.get(f"/sessions/{session['id']}", headers=alice)).json()
    assert again["closed_at"] == closed["closed_at"]


async def test_close_unknown_session_is_404(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.delete(f"/sessions/{uuid.uuid4()}", headers=alice)
    assert response.status_code == 404


async def test_archived_agents_sessions_keep_working(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    assert (await client.delete(f"/agents/{agent['id']}", headers=alice)).status_code == 204
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["status"] == "open"
    refused = await client.post("/sessions", json={"agent_id": agent["id"], "agent_version": 1}, headers=alice)
    assert refused.status_code == 409


async def test_messages_of_a_new_session_are_an_empty_page(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    response = await client.get(f"/sessions/{session['id']}/messages", headers=alice)
    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}


async def test_messages_bad_cursor_is_400(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    response = await client.get(f"/sessions/{session['id']}/messages", params={"cursor": "abc"}, headers=alice)
    assert response.status_code == 400
    assert response.json()["errors"][0]["loc"] == ["query", "cursor"]


async def test_messages_of_unknown_session_is_404(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.get(f"/sessions/{uuid.uuid4()}/messages", headers=alice)
    assert response.status_code == 404


async def test_sessions_need_a_token(client: httpx.AsyncClient) -> None:
    for method, path in [("GET", "/sessions"), ("POST", "/sessions"), ("GET", f"/sessions/{uuid.uuid4()}")]:
        response = await client.request(method, path)
        assert response.status_code == 401, (method, path)


async def test_closing_a_session_cancels_its_interrupted_turn_and_expires_its_approvals(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    config = scripted_config(
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
        policies=[{"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}],
    )
    agent = await create_agent(client, alice, config)
    session = await create_session(client, alice, agent["id"])
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
    approval_id = next(f.data["approval_id"] for f in frames if f.event == "approval.required")
    assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
    turn = (await client.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert turn["status"] == "cancelled"
    approval = (await client.get(f"/approvals/{approval_id}", headers=alice)).json()
    assert approval["status"] == "expired"
    replay = await read_turn(client, "GET", f"/turns/{turn['id']}/events?after={frames[-1].id}", headers=alice)
    assert [f.data["status"] for f in replay] == ["cancelled"]
