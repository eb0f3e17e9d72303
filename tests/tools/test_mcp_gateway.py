"""The MCP gateway client against a real `mcp` server on loopback (uvicorn in a thread)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from app.providers.base import ToolSpec
from app.tools.ledger_keys import idempotency_key
from app.tools.mcp_gateway import McpGatewayClient, McpGatewayUnavailable, filter_tools
from tests.mcp_server import Gateway, dead_port, serve_gateway

TOKEN = "gateway-token-abc.def.ghi"
BAD_TOKEN = "rejected-token-xyz.uvw"
TEAM = "eng"
TIMEOUT_SECONDS = 30.0
"""Generous: a loaded machine may take seconds over a handshake; only the slow-tool test wants a timeout."""
SLOW_TOOL_TIMEOUT_SECONDS = 1.0


def build_mcp_server(gateway: Gateway) -> MCPServer:
    server = MCPServer("test-gateway")

    @server.tool(name="github__create_issue", description="Open an issue")
    def create_issue(title: str, ctx: Context) -> str:
        headers = ctx.headers or {}
        gateway.calls.append((title, headers.get("x-idempotency-key")))
        return f"created issue: {title}"

    @server.tool(name="github__explode", description="Always fails")
    def explode() -> str:
        raise RuntimeError("kaboom")

    @server.tool(name="github__rpc_error", description="Answers with a JSON-RPC error")
    def rpc_error() -> str:
        raise MCPError(-32001, "upstream request timed out")

    @server.tool(name="jira__slow", description="Takes too long")
    async def slow() -> str:
        await asyncio.sleep(3)
        return "late"

    return server


def _gateway(*, legacy_only: bool) -> Iterator[Gateway]:
    with serve_gateway(build_mcp_server, team=TEAM, legacy_only=legacy_only, rejected_bearer=BAD_TOKEN) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def modern_gateway() -> Iterator[Gateway]:
    yield from _gateway(legacy_only=False)


@pytest.fixture(scope="module")
def legacy_gateway() -> Iterator[Gateway]:
    yield from _gateway(legacy_only=True)


@pytest.fixture(params=["modern", "legacy"])
def gateway(request: pytest.FixtureRequest) -> Gateway:
    chosen: Gateway = request.getfixturevalue(f"{request.param}_gateway")
    chosen.clear()
    return chosen


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[McpGatewayClient]:
    mcp = McpGatewayClient(gateway.url, timeout=TIMEOUT_SECONDS)
    yield mcp
    await mcp.aclose()


async def test_list_tools_returns_the_gateway_tools_verbatim(client: McpGatewayClient) -> None:
    tools = await client.list_tools(TOKEN, TEAM)

    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"github__create_issue", "github__explode", "github__rpc_error", "jira__slow"}
    issue = by_name["github__create_issue"]
    assert issue.description == "Open an issue"
    assert issue.input_schema["properties"]["title"]["type"] == "string"
    assert issue.input_schema["required"] == ["title"]


async def test_every_request_carries_the_bearer(client: McpGatewayClient, gateway: Gateway) -> None:
    await client.list_tools(TOKEN, TEAM)
    await client.call_tool(TOKEN, TEAM, "github__create_issue", {"title": "t"}, "k-1")

    assert gateway.requests
    assert {r.authorization for r in gateway.requests} == {f"Bearer {TOKEN}"}


async def test_call_tool_returns_content_and_sends_the_idempotency_key(
    client: McpGatewayClient, gateway: Gateway
) -> None:
    key = idempotency_key("session-1", "turn-1", "call-1")

    result = await client.call_tool(TOKEN, TEAM, "github__create_issue", {"title": "Bug"}, key)

    assert not result.is_error
    assert result.content == "created issue: Bug"
    assert gateway.calls == [("Bug", key)]


async def test_only_tools_call_carries_the_idempotency_key(client: McpGatewayClient, gateway: Gateway) -> None:
    await client.call_tool(TOKEN, TEAM, "github__create_issue", {"title": "x"}, "k-only")

    keyed = [r for r in gateway.requests if r.idempotency_key is not None]
    assert [(r.rpc_method, r.idempotency_key) for r in keyed] == [("tools/call", "k-only")]
    assert len(gateway.requests) > 1


async def test_a_failing_tool_is_an_error_result(client: McpGatewayClient) -> None:
    result = await client.call_tool(TOKEN, TEAM, "github__explode", {}, "k-2")

    assert result.is_error
    assert "github__explode" in result.content


async def test_an_unknown_tool_is_an_error_result(client: McpGatewayClient) -> None:
    result = await client.call_tool(TOKEN, TEAM, "github__no_such_tool", {}, "k-3")

    assert result.is_error
    assert "Unknown tool: github__no_such_tool" in result.content


async def test_a_json_rpc_error_is_an_error_result_with_its_code(client: McpGatewayClient) -> None:
    result = await client.call_tool(TOKEN, TEAM, "github__rpc_error", {}, "k-4")

    assert result.is_error
    assert result.content == "MCP error -32001: upstream request timed out"


async def test_invalid_arguments_are_an_error_result(client: McpGatewayClient) -> None:
    result = await client.call_tool(TOKEN, TEAM, "github__create_issue", {"title": 7, "extra": []}, "k-5")

    assert result.is_error


async def test_a_slow_tool_times_out_into_an_error_result(gateway: Gateway) -> None:
    mcp = McpGatewayClient(gateway.url, timeout=SLOW_TOOL_TIMEOUT_SECONDS)
    try:
        result = await mcp.call_tool(TOKEN, TEAM, "jira__slow", {}, "k-6")
    finally:
        await mcp.aclose()

    assert result.is_error
    assert "timed out" in result.content


async def test_concurrent_calls_each_deliver_their_own_key(client: McpGatewayClient, gateway: Gateway) -> None:
    await client.list_tools(TOKEN, TEAM)
    titles = [f"issue-{i}" for i in range(6)]

    results = await asyncio.gather(
        *(client.call_tool(TOKEN, TEAM, "github__create_issue", {"title": t}, f"key-{t}") for t in titles)
    )

    assert [r.content for r in results] == [f"created issue: {t}" for t in titles]
    assert sorted(gateway.calls) == sorted((t, f"key-{t}") for t in titles)


async def test_a_rejected_token_fails_discovery_without_leaking_it(gateway: Gateway) -> None:
    mcp = McpGatewayClient(gateway.url, timeout=TIMEOUT_SECONDS)
    try:
        with pytest.raises(McpGatewayUnavailable) as caught:
            await mcp.list_tools(BAD_TOKEN, TEAM)
        result = await mcp.call_tool(BAD_TOKEN, TEAM, "github__create_issue", {"title": "x"}, "k-7")
    finally:
        await mcp.aclose()

    assert "HTTP 401" in str(caught.value)
    assert BAD_TOKEN not in str(caught.value)
    assert result.is_error
    assert "HTTP 401" in result.content
    assert BAD_TOKEN not in result.content


async def test_modern_gateway_reuses_one_connection(modern_gateway: Gateway) -> None:
    modern_gateway.requests.clear()
    mcp = McpGatewayClient(modern_gateway.url, timeout=TIMEOUT_SECONDS)
    try:
        await mcp.list_tools(TOKEN, TEAM)
        for i in range(3):
            await mcp.call_tool(TOKEN, TEAM, "github__create_issue", {"title": f"r{i}"}, f"r{i}")
    finally:
        await mcp.aclose()

    assert len({r.client_port for r in modern_gateway.requests}) == 1
    assert [r.rpc_method for r in modern_gateway.requests].count("server/discover") == 1


async def test_a_dead_gateway_fails_discovery_and_calls() -> None:
    mcp = McpGatewayClient(f"http://127.0.0.1:{dead_port()}", timeout=TIMEOUT_SECONDS)
    try:
        with pytest.raises(McpGatewayUnavailable, match="unreachable"):
            await mcp.list_tools(TOKEN, TEAM)
        result = await mcp.call_tool(TOKEN, TEAM, "github__create_issue", {"title": "x"}, "k-8")
    finally:
        await mcp.aclose()

    assert result.is_error
    assert "unreachable" in result.content
    assert TOKEN not in result.content


def test_idempotency_key_is_deterministic_and_distinct() -> None:
    key = idempotency_key("s-1", "t-1", "call-a")

    assert key == idempotency_key("s-1", "t-1", "call-a")
    assert len(key) == 64
    assert int(key, 16) >= 0
    assert len({key, idempotency_key("s-1", "t-2", "call-a"), idempotency_key("s-2", "t-1", "call-a")}) == 3
    assert idempotency_key("s-1", "t-1", "call-b") != key


def test_filter_tools_keeps_only_the_agents_servers() -> None:
    tools = [
        ToolSpec("github__create_issue", "", {}),
        ToolSpec("github__delete_repo", "", {}),
        ToolSpec("githubby__x", "", {}),
        ToolSpec("jira__create", "", {}),
        ToolSpec("plain", "", {}),
    ]

    assert [t.name for t in filter_tools(tools, ["github"])] == [
        "github__create_issue",
        "github__delete_repo",
    ]
    assert [t.name for t in filter_tools(tools, ["mcp:jira", "github"])] == [
        "github__create_issue",
        "github__delete_repo",
        "jira__create",
    ]
    assert filter_tools(tools, []) == []


async def test_the_protocol_era_is_negotiated_once_per_endpoint(
    client: McpGatewayClient, gateway: Gateway, request: pytest.FixtureRequest
) -> None:
    await client.list_tools(TOKEN, TEAM)
    await client.call_tool(TOKEN, TEAM, "github__create_issue", {"title": "e"}, "k-9")

    legacy = "legacy" in request.node.callspec.id
    assert len(gateway.rpc("server/discover")) == 1
    assert len(gateway.rpc("initialize")) == (2 if legacy else 0)
