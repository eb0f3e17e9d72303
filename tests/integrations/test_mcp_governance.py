"""MCP tools are judged like every other tool, against a real MCP gateway on loopback: the order
known → blacklist → skip-done → policy → execute, a receipt per decision, human receipts."""

from __future__ import annotations

from typing import Any

import respx

from app.governance.policy import arguments_hash
from tests.integrations.conftest import Integrated
from tests.integrations.support import new_session, run_turn, stream_turn
from tests.mcp_server import Gateway

MCP_AGENT: dict[str, Any] = {"tools": ["mcp:github", "builtin:echo"], "context": {"team_unit": "eng"}}
CREATE = {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": "Bug"}}]}


def _judged(run: Any, point: str = "tool") -> list[dict[str, Any]]:
    return [d for d in run.of("policy.decision") if d["point"] == point]


def _rule(verdict: str) -> dict[str, Any]:
    return {
        "id": "gh-writes",
        "point": "tool",
        "tool": "github__create_*",
        "verdict": verdict,
        "reason": "writes to GitHub need a human",
    }


async def _decisions(integrated: Integrated, headers: dict[str, str], turn_id: str) -> list[dict[str, Any]]:
    response = await integrated.client.get(f"/turns/{turn_id}/decisions", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


async def test_a_deny_rule_on_an_mcp_tool_stops_the_call_before_the_gateway(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    session = await new_session(integrated.client, alice, CREATE, {"text": "ok"}, **MCP_AGENT, policies=[_rule("deny")])

    run = await run_turn(integrated.client, alice, session, "file it")

    [completed] = run.of("tool_call.completed")
    assert (completed["is_error"], completed["result"]) == (True, "denied by policy: writes to GitHub need a human")
    [decision] = _judged(run)
    assert (decision["point"], decision["verdict"], decision["rule_id"]) == ("tool", "deny", "gh-writes")
    assert gateway.rpc("tools/call") == []
    assert gateway.calls == []
    receipts = await _decisions(integrated, alice, run.turn_id)
    assert [r["rule_id"] for r in receipts if r["point"] == "tool"] == ["gh-writes"]
    assert run.ended["status"] == "completed"


async def test_a_requires_approval_rule_on_an_mcp_tool_waits_and_the_approved_call_runs_once(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    session = await new_session(
        integrated.client, alice, CREATE, {"text": "filed"}, **MCP_AGENT, policies=[_rule("requires_approval")]
    )

    first = await run_turn(integrated.client, alice, session, "file it")

    assert first.ended["status"] == "interrupted"
    assert gateway.rpc("tools/call") == []
    [required] = first.of("approval.required")
    resumed = await stream_turn(
        integrated.client, "POST", f"/approvals/{required['approval_id']}", json={"decision": "approve"}, headers=alice
    )
    assert resumed.ended["status"] == "completed"
    assert [r.tool_name for r in gateway.rpc("tools/call")] == ["github__create_issue"]
    assert [title for title, _ in gateway.calls] == ["Bug"]
    [human] = _judged(resumed, "human")
    assert (human["point"], human["verdict"], human["decided_by"]) == ("human", "approve", "alice")
    assert human["arguments_sha256"] == arguments_hash({"title": "Bug"})
    assert human["edited_arguments_sha256"] is None


async def test_human_receipts_record_a_deny_and_an_edit(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    two = {
        "tool_calls": [
            {"name": "github__create_issue", "arguments": {"title": "A"}},
            {"name": "github__create_issue", "arguments": {"title": "B"}},
        ]
    }
    session = await new_session(
        integrated.client, alice, two, {"text": "done"}, **MCP_AGENT, policies=[_rule("requires_approval")]
    )
    first = await run_turn(integrated.client, alice, session, "file both")
    approvals = first.of("approval.required")
    body = {
        "decisions": [
            {"approval_id": approvals[0]["approval_id"], "decision": "approve", "arguments": {"title": "A, edited"}},
            {"approval_id": approvals[1]["approval_id"], "decision": "deny", "reason": "duplicate"},
        ]
    }
    resumed = await stream_turn(
        integrated.client, "POST", f"/turns/{first.turn_id}/approvals", json=body, headers=alice
    )

    assert [title for title, _ in gateway.calls] == ["A, edited"]
    stored = [r for r in await _decisions(integrated, alice, first.turn_id) if r["point"] == "human"]
    assert [(r["verdict"], r["decided_by"], r["reason"], r["rule_id"]) for r in stored] == [
        ("approve", "alice", None, "gh-writes"),
        ("deny", "alice", "duplicate", "gh-writes"),
    ]
    assert [(r["arguments_sha256"], r["edited_arguments_sha256"]) for r in stored] == [
        (arguments_hash({"title": "A"}), arguments_hash({"title": "A, edited"})),
        (arguments_hash({"title": "B"}), None),
    ]
    assert [d["point"] for d in resumed.of("policy.decision")] == ["human", "human"]


async def test_an_invented_name_under_a_discovered_prefix_never_reaches_the_gateway(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    invented = {"tool_calls": [{"name": "github__undiscovered", "arguments": {}}]}
    session = await new_session(integrated.client, alice, invented, {"text": "ok"}, **MCP_AGENT)

    run = await run_turn(integrated.client, alice, session, "try it")

    [completed] = run.of("tool_call.completed")
    assert completed["is_error"] is True
    [decision] = _judged(run)
    assert (decision["verdict"], decision["rule_id"]) == ("deny", "unknown_tool")
    assert [r.rpc_method for r in gateway.requests if r.rpc_method and r.rpc_method.startswith("tools/")] == [
        "tools/list"
    ]


async def test_the_blacklist_applies_to_mcp_tools_before_the_policy(
    integrated: Integrated, ce: respx.Router, gateway: Gateway, alice: dict[str, str]
) -> None:
    session = await new_session(
        integrated.client,
        alice,
        CREATE,
        {"text": "ok"},
        **MCP_AGENT,
        tool_blacklist=["github__create_*"],
        policies=[_rule("requires_approval")],
    )
    run = await run_turn(integrated.client, alice, session, "file it")
    assert [d["rule_id"] for d in _judged(run)] == ["tool_blacklist"]
    assert run.ended["status"] == "completed"
    assert gateway.rpc("tools/call") == []
