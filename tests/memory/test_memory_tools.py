"""`builtin:memory` through real turns: the agent remembers for its user, across sessions, under policy."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn

PUT = {"name": "memory_put", "arguments": {"namespace": "prefs", "key": "city", "value": {"city": "Lisbon"}}}
GET = {"name": "memory_get", "arguments": {"namespace": "prefs", "key": "city"}}
SEARCH = {"name": "memory_search", "arguments": {"namespace": "prefs", "query": "lisbon"}}


def _memory_agent(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return scripted_config(*steps, tools=["builtin:memory"], **extra)


async def _turn(client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> list[Any]:
    return await read_turn(client, "POST", f"/sessions/{session_id}/turns", json={"input": "go"}, headers=headers)


def _results(frames: list[Any]) -> list[tuple[str, bool]]:
    return [(f.data["result"], f.data["is_error"]) for f in frames if f.event == "tool_call.completed"]


async def test_agents_remember_for_their_user_across_sessions_and_agents(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    writer = await create_agent(client, alice, _memory_agent({"tool_calls": [PUT]}, {"text": "noted"}))
    reader = await create_agent(client, alice, _memory_agent({"tool_calls": [GET, SEARCH]}, {"text": "ok"}))
    first = await _turn(client, alice, (await create_session(client, alice, writer["id"]))["id"])
    assert _results(first) == [("stored prefs/city", False)]
    second = await _turn(client, alice, (await create_session(client, alice, reader["id"]))["id"])
    got, found = _results(second)
    assert json.loads(got[0])["value"] == {"city": "Lisbon"}
    assert [hit["key"] for hit in json.loads(found[0])] == ["city"]
    stored = await client.get("/memory/prefs/city", headers=alice)
    assert stored.json()["value"] == {"city": "Lisbon"}

    bob = auth_headers(tenant, "bob")
    bobs = await _turn(client, bob, (await create_session(client, bob, reader["id"]))["id"])
    assert _results(bobs)[0] == ("nothing stored under prefs/city", False)


async def test_a_deny_rule_on_memory_put_stops_the_write(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    deny = [{"id": "no-writes", "point": "tool", "tool": "memory_put", "verdict": "deny", "reason": "read-only"}]
    agent = await create_agent(client, alice, _memory_agent({"tool_calls": [PUT]}, {"text": "ok"}, policies=deny))
    frames = await _turn(client, alice, (await create_session(client, alice, agent["id"]))["id"])
    decisions = [f.data for f in frames if f.event == "policy.decision" and f.data["point"] == "tool"]
    assert [(d["verdict"], d["rule_id"]) for d in decisions] == [("deny", "no-writes")]
    assert _results(frames)[0][1] is True
    assert (await client.get("/memory/prefs/city", headers=alice)).status_code == 404


async def test_bad_memory_arguments_come_back_as_error_results(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    bad = {"name": "memory_put", "arguments": {"namespace": "../etc", "key": "k", "value": 1}}
    agent = await create_agent(client, alice, _memory_agent({"tool_calls": [bad]}, {"text": "ok"}))
    frames = await _turn(client, alice, (await create_session(client, alice, agent["id"]))["id"])
    [(message, is_error)] = _results(frames)
    assert is_error
    assert "namespace must match" in message
    assert frames[-1].data["status"] == "completed"
