from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.factories import create_agent, scripted_config


def _with(**changes: Any) -> dict[str, Any]:
    return scripted_config() | changes


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (_with(model={"provider": "mistral", "name": "x"}), "model.provider"),
        (_with(model={"provider": "scripted"}), "model"),
        (_with(model={"provider": "anthropic"}), "model"),
        (_with(model={"provider": "openai"}), "model"),
        (_with(model={"provider": "gemini"}), "model"),
        (_with(model={"provider": "openai", "name": "gpt-4o", "credential": "Bad Name"}), "model.credential"),
        (_with(model={"provider": "openai", "name": "gpt-4o", "context_window": 10}), "model.context_window"),
        (_with(tools=["shell:rm"]), "tools"),
        (_with(tools=["builtin:unknown"]), "tools"),
        (_with(limits={"max_loops": 0}), "limits.max_loops"),
        (_with(limits={"max_loops": 1000}), "limits.max_loops"),
        (_with(limits={"max_output_tokens": -1}), "limits.max_output_tokens"),
        (_with(policies=[{"id": "p", "point": "tool", "verdict": "deny"}]), "policies.0"),
        (_with(policies=[{"id": "p", "point": "tool", "tool": "*", "verdict": "maybe"}]), "policies.0.verdict"),
        (_with(runtime="other"), "runtime"),
        (_with(tools=["claude:Read"]), "tools"),
        (_with(runtime="langgraph", tools=["builtin:echo", "claude:Write"]), "tools"),
        (_with(runtime="claude_sdk", tools=["claude:Bash"]), "tools"),
        (_with(runtime="claude_sdk"), ""),
        (_with(surprise=True), "surprise"),
    ],
)
async def test_invalid_config_names_the_field(
    client: httpx.AsyncClient, alice: dict[str, str], config: dict[str, Any], field: str
) -> None:
    response = await client.post("/agents", json={"name": "bad", "config": config}, headers=alice)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    locations = [".".join(e["loc"]) for e in body["errors"]]
    assert any(loc.startswith(f"body.config.{field}".rstrip(".")) for loc in locations), locations
    assert body["status"] == 422
    assert body["title"]
    assert body["type"]


async def test_wrong_types_are_422(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.post("/agents", json={"name": 5, "config": "nope"}, headers=alice)
    assert response.status_code == 422
    locations = {".".join(e["loc"]) for e in response.json()["errors"]}
    assert {"body.name", "body.config"} <= locations


async def test_malformed_json_is_422_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    response = await client.post("/agents", content=b"{not json", headers=alice | {"content-type": "application/json"})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("tools", [["mcp:github"], ["builtin:echo", "mcp:jira"]])
async def test_mcp_tools_without_a_gateway_are_refused(
    client: httpx.AsyncClient, alice: dict[str, str], tools: list[str]
) -> None:
    response = await client.post("/agents", json={"name": "gh", "config": scripted_config(tools=tools)}, headers=alice)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "mcp_gateway_not_configured"
    assert body["type"].endswith("/mcp-gateway-not-configured")
    assert (await client.get("/agents", headers=alice)).json()["items"] == []


async def test_patching_in_mcp_tools_without_a_gateway_is_refused(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    patch = {"config": scripted_config(tools=["mcp:github"])}
    response = await client.patch(f"/agents/{agent['id']}", json=patch, headers=alice)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "mcp_gateway_not_configured"
    assert (await client.get(f"/agents/{agent['id']}", headers=alice)).json()["version"] == 1


@pytest.mark.parametrize(
    "model",
    [
        {"provider": "openai", "name": "gpt-4o-mini"},
        {"provider": "openai", "name": "llama3.1:8b", "credential": "local-ollama", "context_window": 131072},
        {"provider": "gemini", "name": "gemini-2.5-flash", "credential": "team.gemini"},
    ],
)
async def test_every_provider_is_accepted_with_its_credential_and_window(
    client: httpx.AsyncClient, alice: dict[str, str], model: dict[str, Any]
) -> None:
    response = await client.post("/agents", json={"name": "ok", "config": _with(model=model)}, headers=alice)

    assert response.status_code == 201, response.text
    assert response.json()["config"]["model"] == {"max_tokens": 1024, "chunk_delay_ms": 0, **model}


async def test_a_claude_sdk_agent_may_list_claude_tools(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    config = {
        "model": {"provider": "anthropic", "name": "claude-sonnet-4-5"},
        "runtime": "claude_sdk",
        "tools": ["builtin:echo", "claude:Read", "claude:Grep"],
    }
    response = await client.post("/agents", json={"name": "coder", "config": config}, headers=alice)
    assert response.status_code == 201, response.text
    assert response.json()["config"]["runtime"] == "claude_sdk"
    assert response.json()["config"]["tools"] == ["builtin:echo", "claude:Read", "claude:Grep"]
