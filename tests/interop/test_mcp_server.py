"""The official `mcp` client drives `/mcp`: list, call (progress, structured result), approvals asked
through elicitation or answered through the API, cancellation, auth and tenant isolation.

Every call is an ordinary turn: the REST API shows it with `channel: "mcp"`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.approvals.helpers import GATE_CALCULATOR
from tests.factories import create_agent, scripted_config
from tests.interop.conftest import bearer

GATED = scripted_config(
    {"text": "Let me check.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[GATE_CALCULATOR],
)


@asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str], **options: Any) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None, **options) as client,
    ):
        yield client


def _approve(answers: list[dict[str, Any]]) -> Any:
    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        answers.append(params.model_dump(by_alias=True))
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    return elicit


async def test_tools_list_names_each_agent_and_a_call_streams_progress_and_returns_the_turn(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    answer = scripted_config({"text": "Hello from the helper."})
    first = await create_agent(api, user, answer, name="Research helper")
    twin = await create_agent(api, user, answer, name="Research helper")
    archived = await create_agent(api, user, answer, name="old")
    assert (await api.delete(f"/agents/{archived['id']}", headers=user)).status_code == 204
    deltas: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        deltas.append(message or "")

    async with mcp_client(f"{base_url}/mcp", user) as client:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == ["Research_helper", f"Research_helper-{twin['id'].replace('-', '')[:6]}"]
        assert listed[0].input_schema["required"] == ["input"]
        assert set(listed[0].input_schema["properties"]) == {"input", "session", "agent_version"}
        result = await client.call_tool(
            "Research_helper", {"input": "hi", "session": "chat-1"}, progress_callback=progress
        )
    assert not result.is_error
    assert result.content[0].text == "Hello from the helper."
    assert "".join(deltas) == "Hello from the helper."
    structured = result.structured_content
    assert structured["status"] == "completed"
    assert set(structured) >= {"turn_id", "session_id", "status", "usage"}

    turn = (await api.get(f"/turns/{structured['turn_id']}", headers=user)).json()
    assert turn["channel"] == "mcp"
    assert turn["session_id"] == structured["session_id"]
    session = (await api.get(f"/sessions/{structured['session_id']}", headers=user)).json()
    assert session["external_id"] == "chat-1"
    assert session["agent_id"] == first["id"]
    usage = (await api.get("/usage", params={"group_by": "channel"}, headers=user)).json()
    assert [(g["channel"], g["calls"]) for g in usage["items"]] == [("mcp", 1)]


async def test_a_gated_call_asks_the_client_by_elicitation_and_its_answer_resumes_the_turn(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, GATED, name="calc")
    asked: list[dict[str, Any]] = []
    async with mcp_client(f"{base_url}/mcp", user, elicitation_callback=_approve(asked)) as client:
        result = await client.call_tool("calc", {"input": "what is 6 times 7?"})
    assert result.content[0].text == "It is 42."
    assert result.structured_content["status"] == "completed"
    assert len(asked) == 1
    assert "calculator" in asked[0]["message"]
    assert '{"expression":"6*7"}' in asked[0]["message"]
    assert asked[0]["requestedSchema"]["properties"]["decision"]["enum"] == ["approve", "deny"]
    turn_id = result.structured_content["turn_id"]
    query = {"session_id": result.structured_content["session_id"]}
    [decided] = (await api.get("/approvals", params=query, headers=user)).json()["items"]
    assert decided["turn_id"] == turn_id
    assert decided["status"] == "approved"
    assert decided["decided_by"] == "alice"
    assert decided["decided_channel"] == "mcp"
    receipts = (await api.get(f"/turns/{turn_id}/decisions", headers=user)).json()
    human = [r for r in receipts["items"] if r["point"] == "human"]
    assert [(r["verdict"], r["decided_by"]) for r in human] == [("approve", "alice")]
    assert (await api.get(f"/turns/{turn_id}", headers=user)).json()["channel"] == "mcp"
    assert agent["id"]


async def test_without_elicitation_the_result_names_the_approvals_and_a_later_call_continues(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, GATED, name="calc")
    async with mcp_client(f"{base_url}/agents/{agent['id']}/mcp", user, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["calc"]
        waiting = await client.call_tool("calc", {"input": "what is 6 times 7?", "session": "s-1"})
        structured = waiting.structured_content
        assert structured["status"] == "interrupted"
        [approval] = structured["approvals"]
        assert approval["name"] == "calculator"
        assert approval["url"] == f"{base_url}/approvals/{approval['approval_id']}"
        decided = await api.post(
            approval["url"], json={"decision": "approve"}, headers={**user, "Prefer": "respond-async"}
        )
        assert decided.status_code == 202, decided.text
        again = await client.call_tool("calc", {"input": "what is 6 times 7?", "session": "s-1"})
    assert again.content[0].text == "It is 42."
    assert again.structured_content["turn_id"] == structured["turn_id"]
    turns = (await api.get(f"/sessions/{structured['session_id']}/turns", headers=user)).json()["items"]
    assert len(turns) == 1
    async with mcp_client(f"{base_url}/agents/{agent['id']}/mcp", user, mode="legacy") as client:
        nxt = await client.call_tool("calc", {"input": "another question", "session": "s-1"})
    assert nxt.structured_content["turn_id"] != structured["turn_id"]


async def test_a_failed_turn_is_an_error_result_with_its_code(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    denied = scripted_config(
        {"text": "never"}, policies=[{"id": "no", "point": "pre_llm", "input_regex": "hi", "verdict": "deny"}]
    )
    await create_agent(api, user, denied, name="strict")
    async with mcp_client(f"{base_url}/mcp", user) as client:
        result = await client.call_tool("strict", {"input": "hi"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nobody", {"input": "hi"})
        with pytest.raises(MCPError) as bad:
            await client.call_tool("strict", {"session": "x"})
    assert result.is_error
    assert result.structured_content["error"]["code"] == "policy_denied"
    assert result.content[0].text.startswith("policy_denied:")
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert bad.value.error.code == types.INVALID_PARAMS


async def test_cancelling_a_call_cancels_its_turn(base_url: str, api: httpx.AsyncClient, user: dict[str, str]) -> None:
    slow = scripted_config({"text": "a long answer " * 50})
    slow["model"]["chunk_delay_ms"] = 100
    await create_agent(api, user, slow, name="slow")
    started = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    async with mcp_client(f"{base_url}/mcp", user) as client:
        call = asyncio.create_task(
            client.call_tool("slow", {"input": "go", "session": "c-1"}, progress_callback=progress)
        )
        await started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    sessions = (await api.get("/sessions", headers=user)).json()["items"]
    turns_url = f"/sessions/{sessions[0]['id']}/turns"
    for _ in range(100):
        [turn] = (await api.get(turns_url, headers=user)).json()["items"]
        if turn["status"] != "running":
            break
        await asyncio.sleep(0.1)
    assert turn["status"] == "cancelled"


async def test_auth_and_tenants_are_those_of_the_rest_api(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, scripted_config(), name="mine")
    missing = await api.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert (await api.get("/.well-known/oauth-protected-resource")).status_code == 404  # no AUTH_ISSUER here
    other = bearer("another-tenant")
    assert (await api.post(f"/agents/{agent['id']}/mcp", json={}, headers=other)).status_code == 404
    async with mcp_client(f"{base_url}/mcp", other) as client:
        assert (await client.list_tools()).tools == []
        with pytest.raises(MCPError):
            await client.call_tool("mine", {"input": "hi"})


@pytest.mark.parametrize(
    ("answer", "status", "edited"),
    [
        (types.ElicitResult(action="accept", content={"decision": "approve", "arguments": '{"expression": "2*3"}'}),
         "approved", {"expression": "2*3"}),
        (types.ElicitResult(action="decline"), "denied", None),
    ],
    ids=["edited", "declined"],
)  # fmt: skip
async def test_an_elicitation_answer_edits_or_denies_the_call(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str], answer: types.ElicitResult, status: str,
    edited: dict[str, Any] | None,
) -> None:  # fmt: skip
    await create_agent(api, user, GATED, name="calc")

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return answer

    async with mcp_client(f"{base_url}/mcp", user, elicitation_callback=elicit) as client:
        result = await client.call_tool("calc", {"input": "what is 6 times 7?"})
    assert result.structured_content["status"] == "completed"
    query = {"session_id": result.structured_content["session_id"]}
    [approval] = (await api.get("/approvals", params=query, headers=user)).json()["items"]
    assert (approval["status"], approval["edited_arguments"]) == (status, edited)
