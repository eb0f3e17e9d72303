"""Turns against a real MCP gateway on loopback: discovery, calls, tokens, idempotency, failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import respx

from app.settings import McpGatewaySettings
from app.tools.ledger_keys import idempotency_key
from tests.conftest import make_settings, running_app
from tests.integrations.conftest import Integrated
from tests.integrations.support import (
    TURN_CLAIMS,
    bearer,
    ledger_keys,
    new_session,
    run_turn,
    stream_turn,
    verify_token,
)
from tests.mcp_server import Gateway, dead_port

MCP_AGENT: dict[str, Any] = {"tools": ["mcp:github", "builtin:echo"], "context": {"team_unit": "eng"}}
TWO_ISSUES = {
    "tool_calls": [
        {"name": "github__create_issue", "arguments": {"title": "Bug"}},
        {"name": "github__create_issue", "arguments": {"title": "Other bug"}},
    ]
}


async def test_discovery_offers_only_the_agents_servers(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    session = await new_session(integrated.client, alice, {"text": "nothing to do"}, **MCP_AGENT)

    run = await run_turn(integrated.client, alice, session, "which tools?")

    assert run.ended["status"] == "completed"
    [request] = integrated.model.requests
    assert [t.name for t in request.tools] == ["echo", "github__create_issue", "github__explode"]
    issue = next(t for t in request.tools if t.name == "github__create_issue")
    assert issue.description == "Open an issue"
    assert issue.input_schema["required"] == ["title"]
    assert gateway.rpc("tools/list")
    assert {r.path for r in gateway.requests} == {"/mcp/team/eng"}


async def test_calls_reach_the_gateway_with_the_token_and_idempotency_key(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str], tenant: str
) -> None:
    session = await new_session(integrated.client, alice, TWO_ISSUES, {"text": "filed"}, **MCP_AGENT)

    run = await run_turn(integrated.client, alice, session, "file two issues")

    assert run.ended["status"] == "completed"
    requested = run.of("tool_call.requested")
    keys = [idempotency_key(session["id"], run.turn_id, c["tool_call_id"]) for c in requested]
    assert len(set(keys)) == 2
    assert [(r.tool_name, r.idempotency_key) for r in gateway.rpc("tools/call")] == [
        ("github__create_issue", keys[0]),
        ("github__create_issue", keys[1]),
    ]
    assert gateway.calls == [("Bug", keys[0]), ("Other bug", keys[1])]
    assert [(c["name"], c["is_error"], c["result"]) for c in run.of("tool_call.completed")] == [
        ("github__create_issue", False, "created issue: Bug"),
        ("github__create_issue", False, "created issue: Other bug"),
    ]
    assert await ledger_keys(integrated.app, session["id"]) == keys
    tokens = {bearer(r.authorization) for r in gateway.requests}
    assert len(tokens) == 1
    claims = await verify_token(integrated.client, tokens.pop(), "mcp-gateway")
    assert set(claims) == TURN_CLAIMS
    assert claims["aud"] == "mcp-gateway"
    assert claims["sub"] == f"agent:{session['agent_id']}"
    assert claims["act"] == {"sub": "alice"}
    assert (claims["tenant_id"], claims["agent_id"]) == (tenant, session["agent_id"])
    assert (claims["session_id"], claims["turn_id"]) == (session["id"], run.turn_id)
    assert 0 < claims["exp"] - claims["iat"] <= 300


async def test_a_tool_outside_the_agents_servers_is_not_available(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    step = {"tool_calls": [{"name": "other__tool", "arguments": {}}]}
    session = await new_session(integrated.client, alice, step, {"text": "ok"}, **MCP_AGENT)

    run = await run_turn(integrated.client, alice, session, "try the other server")

    assert run.ended["status"] == "completed"
    [completed] = run.of("tool_call.completed")
    assert completed["is_error"] is True
    assert "is not a tool of this agent" in completed["result"]
    assert [d["rule_id"] for d in run.of("policy.decision") if d["point"] == "tool"] == ["unknown_tool"]
    assert gateway.rpc("tools/call") == []
    assert gateway.calls == []


async def test_a_tool_failing_on_the_server_is_an_error_result_and_the_turn_goes_on(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    step = {"tool_calls": [{"name": "github__explode", "arguments": {}}]}
    session = await new_session(integrated.client, alice, step, {"text": "recovered"}, **MCP_AGENT)

    run = await run_turn(integrated.client, alice, session, "explode")

    [completed] = run.of("tool_call.completed")
    assert completed["is_error"] is True
    assert completed["result"].startswith("Error executing tool github__explode")
    assert run.ended["status"] == "completed"
    assert run.ended["final_output"] == "recovered"
    tool_message = integrated.model.requests[1].messages[-1]
    assert (tool_message.role, tool_message.is_error) == ("tool", True)


async def test_an_agent_without_mcp_tools_gets_no_gateway_token_and_makes_no_traffic(
    integrated: Integrated,
    ce: respx.Router,
    gateway: Gateway,
    alice: dict[str, str],
    minted_audiences: list[str],
) -> None:
    step = {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}
    session = await new_session(integrated.client, alice, step, {"text": "done"}, context={"team_unit": "eng"})

    run = await run_turn(integrated.client, alice, session, "no mcp here")

    assert run.ended["status"] == "completed"
    assert gateway.requests == []
    assert minted_audiences == ["context-engine"]
    assert [t.name for t in integrated.model.requests[0].tools] == ["calculator", "echo", "current_time"]


async def test_a_redelivered_call_returns_the_ledger_result_without_reaching_the_gateway(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    """The real re-delivery path: an approval resumes the batch, and the MCP call that already ran
    in it is delivered to execute_tools a second time."""
    client = integrated.client
    batch = {
        "tool_calls": [
            {"name": "github__create_issue", "arguments": {"title": "Once"}},
            {"name": "echo", "arguments": {"text": "after"}},
        ]
    }
    gate = {"id": "echo-gate", "point": "tool", "tool": "echo", "verdict": "requires_approval", "reason": "ask"}
    session = await new_session(client, alice, batch, {"text": "done"}, **MCP_AGENT, policies=[gate])

    first = await run_turn(client, alice, session, "file it")

    assert first.ended["status"] == "interrupted"
    issue_call, echo_call = [c["tool_call_id"] for c in first.of("tool_call.requested")]
    key = idempotency_key(session["id"], first.turn_id, issue_call)
    assert gateway.calls == [("Once", key)]
    [approval] = first.of("approval.required")

    resumed = await stream_turn(
        client, "POST", f"/approvals/{approval['approval_id']}", json={"decision": "approve"}, headers=alice
    )

    assert resumed.ended["status"] == "completed"
    assert resumed.turn_id == first.turn_id
    assert [r.idempotency_key for r in gateway.rpc("tools/call")] == [key]
    assert gateway.calls == [("Once", key)]
    assert [c["name"] for c in resumed.of("tool_call.completed")] == ["echo"]
    echo_key = idempotency_key(session["id"], first.turn_id, echo_call)
    assert await ledger_keys(integrated.app, session["id"]) == [key, echo_key]
    tool_results = [m for m in integrated.model.requests[-1].messages if m.role == "tool"]
    assert [m.content for m in tool_results] == ["created issue: Once", "after"]
    first_jti, resumed_jti = [
        (await verify_token(client, bearer(r.authorization), "mcp-gateway"))["jti"]
        for r in (gateway.requests[0], gateway.requests[-1])
    ]
    assert first_jti != resumed_jti, "a resumed run mints its own gateway token"


async def test_a_dead_gateway_fails_the_turn(database_url: str, data_dir: Path, alice: dict[str, str]) -> None:
    settings = make_settings(
        database_url, data_dir, mcp_gateway=McpGatewaySettings(url=f"http://127.0.0.1:{dead_port()}")
    )
    async with running_app(settings) as (_, client):
        session = await new_session(client, alice, {"text": "unreachable"}, **MCP_AGENT)

        run = await run_turn(client, alice, session, "anyone there?")

    assert run.ended["status"] == "failed"
    assert run.ended["error"]["code"] == "mcp_gateway_unavailable"
    assert "unreachable" in run.ended["error"]["message"]
    assert run.of("message.completed") == []
