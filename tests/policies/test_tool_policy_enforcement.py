"""The tool point, per call: blacklist before everything, deny as a result the model reads, tenant
rules before agent rules. (MCP tools, judged the same way, are tested against a real gateway in
tests/integrations.)"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.approvals.helpers import (
    ended,
    events,
    results,
    run_turn,
)
from tests.conftest import TokenFactory
from tests.factories import scripted_config

CALC_THEN_ECHO = {
    "tool_calls": [
        {"name": "calculator", "arguments": {"expression": "6*7"}},
        {"name": "echo", "arguments": {"text": "after"}},
    ]
}


def rule(rule_id: str, tool: str, verdict: str, **fields: Any) -> dict[str, Any]:
    return {"id": rule_id, "point": "tool", "tool": tool, "verdict": verdict, **fields}


def config(*policies: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return scripted_config(CALC_THEN_ECHO, {"text": "final answer"}, policies=list(policies), **extra)


def completed(frames: list[Any], name: str) -> dict[str, Any]:
    return next(e for e in events(frames, "tool_call.completed") if e["name"] == name)


def decisions_for(frames: list[Any], tool_call_id: str) -> list[dict[str, Any]]:
    return [e for e in events(frames, "policy.decision") if e["tool_call_id"] == tool_call_id]


@pytest.fixture
def root(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


async def put_policies(client: httpx.AsyncClient, root: dict[str, str], *policies: dict[str, Any]) -> None:
    response = await client.put("/policies", json={"policies": list(policies)}, headers=root)
    assert response.status_code == 200, response.text


async def test_blacklisted_tool_is_denied_as_an_error_result(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    _, frames = await run_turn(client, alice, config(tool_blacklist=["ech*"]))
    echo = completed(frames, "echo")
    assert echo["is_error"] is True
    assert echo["result"].startswith("denied by policy")
    decision = decisions_for(frames, echo["tool_call_id"])
    assert [(d["verdict"], d["rule_id"]) for d in decision] == [("deny", "tool_blacklist")]
    assert completed(frames, "calculator")["result"] == "42"
    assert ended(frames)["status"] == "completed"


async def test_blacklist_beats_a_tenant_allow_rule(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    await put_policies(client, root, rule("echo-ok", "echo", "allow"))
    _, frames = await run_turn(client, alice, config(tool_blacklist=["echo"]))
    echo = completed(frames, "echo")
    assert echo["is_error"] is True
    assert "denied by policy" in echo["result"]
    assert [d["rule_id"] for d in decisions_for(frames, echo["tool_call_id"])] == ["tool_blacklist"]


async def test_deny_rule_gives_an_error_result_and_the_batch_and_loop_go_on(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    deny = rule("no-maths", "calc*", "deny", reason="no maths today")
    _, frames = await run_turn(client, alice, config(deny))
    assert results(frames) == ["denied by policy: no maths today", "after"]
    calc = completed(frames, "calculator")
    assert calc["is_error"] is True
    assert [(d["verdict"], d["rule_id"]) for d in decisions_for(frames, calc["tool_call_id"])] == [("deny", "no-maths")]
    assert [e["text"] for e in events(frames, "message.completed")][-1] == "final answer"
    assert ended(frames)["status"] == "completed"
    assert ended(frames)["final_output"] == "final answer"


async def test_deny_rule_matches_arguments_exactly(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    deny = rule("no-after", "echo", "deny", args={"text": "after"})
    other = rule("no-before", "echo", "deny", args={"text": "before"})
    _, frames = await run_turn(client, alice, config(other, deny))
    assert results(frames) == ["42", "denied by policy: rule no-after"]


async def test_tenant_allow_overrides_an_agent_approval_rule(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    await put_policies(client, root, rule("tenant-calc-ok", "calculator", "allow"))
    _, frames = await run_turn(client, alice, config(rule("agent-gate", "calculator", "requires_approval")))
    assert events(frames, "approval.required") == []
    assert results(frames) == ["42", "after"]
    calc = completed(frames, "calculator")
    assert [d["rule_id"] for d in decisions_for(frames, calc["tool_call_id"])] == ["tenant-calc-ok"]
    assert ended(frames)["status"] == "completed"


async def test_tenant_deny_overrides_an_agent_allow_rule(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    await put_policies(client, root, rule("tenant-no-calc", "calculator", "deny"))
    _, frames = await run_turn(client, alice, config(rule("agent-calc-ok", "calculator", "allow")))
    calc = completed(frames, "calculator")
    assert calc["is_error"] is True
    assert calc["result"] == "denied by policy: rule tenant-no-calc"
    assert [d["rule_id"] for d in decisions_for(frames, calc["tool_call_id"])] == ["tenant-no-calc"]


@pytest.mark.parametrize("name", ["github__create_issue", "calculator_v2", "current_time"])
async def test_a_tool_the_agent_does_not_offer_is_an_unknown_tool_before_any_rule(
    client: httpx.AsyncClient, alice: dict[str, str], name: str
) -> None:
    step = {"tool_calls": [{"name": name, "arguments": {"title": "x"}}]}
    agent = scripted_config(step, {"text": "ok"}, tools=["builtin:echo"], policies=[rule("all", "*", "deny")])
    _, frames = await run_turn(client, alice, agent)
    call = completed(frames, name)
    assert call["is_error"] is True
    assert call["result"] == f"denied by policy: {name!r} is not a tool of this agent"
    [receipt] = decisions_for(frames, call["tool_call_id"])
    assert (receipt["verdict"], receipt["rule_id"]) == ("deny", "unknown_tool")
    assert ended(frames)["status"] == "completed"
