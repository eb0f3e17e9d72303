"""An app wired to a Context Engine (respx at http://ce.test) and a real MCP gateway on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer

from app.auth.signing import SigningKeys
from app.settings import ContextEngineSettings, McpGatewaySettings
from tests.conftest import make_settings, running_app
from tests.integrations.support import CE_URL, SERVICE, RecordingProvider, record_model_calls
from tests.mcp_server import Gateway, serve_gateway

TEAM = "eng"
ENGINE_CONTEXT = {
    "system_prompt": "Engine system prompt.",
    "layers": [{"level": "team", "content": "Team layer rule."}],
    "documents": [{"id": "doc-1", "content": "Runbook body."}],
    "history": [
        {"role": "user", "content": "an earlier question"},
        {"role": "assistant", "content": "an earlier answer"},
    ],
}


def build_gateway_server(gateway: Gateway) -> MCPServer:
    server = MCPServer("integration-gateway")

    @server.tool(name="github__create_issue", description="Open an issue")
    def create_issue(title: str, ctx: Context) -> str:
        gateway.calls.append((title, (ctx.headers or {}).get("x-idempotency-key")))
        return f"created issue: {title}"

    @server.tool(name="github__explode", description="Always fails")
    def explode() -> str:
        raise RuntimeError("kaboom")

    @server.tool(name="other__tool", description="Belongs to a server the agents do not name")
    def other_tool() -> str:
        gateway.calls.append(("other__tool", None))
        return "other ran"

    return server


@pytest.fixture(scope="module")
def mcp_gateway() -> Iterator[Gateway]:
    with serve_gateway(build_gateway_server, team=TEAM) as gateway:
        yield gateway


@pytest.fixture
def gateway(mcp_gateway: Gateway) -> Gateway:
    mcp_gateway.clear()
    return mcp_gateway


@dataclass
class Integrated:
    app: FastAPI
    client: httpx.AsyncClient
    model: RecordingProvider


@pytest.fixture(scope="module")
async def integrated_app(database_url: str, data_dir: Path, mcp_gateway: Gateway) -> AsyncIterator[Integrated]:
    settings = make_settings(
        database_url,
        data_dir,
        context_engine=ContextEngineSettings(url=CE_URL),
        mcp_gateway=McpGatewaySettings(url=mcp_gateway.url, timeout_seconds=5.0),
    )
    async with running_app(settings) as (app, client):
        yield Integrated(app, client, record_model_calls(app))


@pytest.fixture
def integrated(integrated_app: Integrated) -> Integrated:
    integrated_app.model.requests.clear()
    return integrated_app


@pytest.fixture
def ce() -> Iterator[respx.Router]:
    """The Context Engine, answering every operation successfully unless a test says otherwise.

    respx only patches httpx's own transports: the test client (ASGI) and the MCP client (httpx2)
    are untouched, and anything else that tried the network would fail as unmocked.
    """
    with respx.mock(base_url=CE_URL, assert_all_called=False) as router:
        router.post(f"{SERVICE}/AssembleContext", name="assemble").respond(json=ENGINE_CONTEXT)
        router.post(f"{SERVICE}/ValidatePrompt", name="validate").respond(json={"valid": True, "violations": []})
        router.post(f"{SERVICE}/IngestEvent", name="ingest").respond(json={})
        yield router


@pytest.fixture
def minted_audiences(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The audience of every outbound token minted while the test runs, in order."""
    audiences: list[str] = []
    mint = SigningKeys.mint

    def spy(self: SigningKeys, *, audience: str, **kwargs: Any) -> tuple[str, int]:
        audiences.append(audience)
        return mint(self, audience=audience, **kwargs)

    monkeypatch.setattr(SigningKeys, "mint", spy)
    return audiences
