"""The app branching tests run against, on PostgreSQL and on SQLite: the scripted provider recorded (so a
test sees exactly the prompt the model was given), a real MCP gateway on loopback that counts its calls,
and idle expiry and retention configured (run by calling the app's own sweep)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer

from app.providers.base import ModelRequest
from app.settings import LifecycleSettings, McpGatewaySettings
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.integrations.support import RecordingProvider, record_model_calls
from tests.mcp_server import Gateway, serve_gateway
from tests.sse import Frame, read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS

TEAM = "eng"
LIFECYCLE = LifecycleSettings(session_idle_ttl_seconds=3600, retention_days=7, session_sweep_seconds=3600)
MCP_TOOLS: dict[str, Any] = {"tools": ["mcp:github", "builtin:echo"], "context": {"team_unit": TEAM}}


def build_gateway(gateway: Gateway) -> MCPServer:
    server = MCPServer("branching-gateway")

    @server.tool(name="github__create_issue", description="Open an issue")
    def create_issue(title: str, ctx: Context) -> str:
        gateway.calls.append((title, (ctx.headers or {}).get("x-idempotency-key")))
        return f"created issue #{len(gateway.calls)}: {title}"

    return server


@pytest.fixture(scope="module")
def mcp_gateway() -> Iterator[Gateway]:
    with serve_gateway(build_gateway, team=TEAM) as gateway:
        yield gateway


@dataclass
class Branching:
    app: FastAPI
    client: httpx.AsyncClient
    model: RecordingProvider
    gateway: Gateway
    backend: str

    def prompts(self) -> list[ModelRequest]:
        return list(self.model.requests)


@pytest.fixture(params=["postgresql", "sqlite"])
async def branching(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path, mcp_gateway: Gateway
) -> AsyncIterator[Branching]:
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'branching.db'}"
    settings = make_settings(
        url, tmp_path, lifecycle=LIFECYCLE, mcp_gateway=McpGatewaySettings(url=mcp_gateway.url, timeout_seconds=5.0)
    )
    mcp_gateway.clear()
    async with running_app(settings) as (app, client):
        yield Branching(app, client, record_model_calls(app), mcp_gateway, request.param)


async def new_session(
    api: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    agent = await create_agent(api, headers, scripted_config(*steps, **extra))
    return await create_session(api, headers, agent["id"])


async def turn(api: httpx.AsyncClient, headers: dict[str, str], session_id: str, text: str) -> list[Frame]:
    return await read_turn(api, "POST", f"/sessions/{session_id}/turns", json={"input": text}, headers=headers)


async def messages(
    api: httpx.AsyncClient, headers: dict[str, str], session_id: str, **params: str
) -> list[dict[str, Any]]:
    response = await api.get(f"/sessions/{session_id}/messages", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def said(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in items]


def prompt_of(request: ModelRequest) -> list[tuple[str, str]]:
    """The conversation a model call was given (role, content), as `said` shows stored messages."""
    return [(m.role, m.content) for m in request.messages]


async def settled(api: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> dict[str, Any]:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            current = (await api.get(f"/turns/{turn_id}", headers=headers)).json()
            if current["status"] not in ("queued", "running"):
                return dict(current)
            await asyncio.sleep(0.05)
