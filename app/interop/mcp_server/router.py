"""MCP endpoints: HTTP only (auth, then the transport); the protocol is in `server.py`."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.types import Receive, Scope, Send

from app.core.problems import problem_responses
from app.deps import ContainerDep
from app.errors import NotFound
from app.interop.auth import METADATA_PATH, DoorPrincipal, base_url
from app.interop.door import Door
from app.interop.mcp_server.server import Caller, McpServer

router = APIRouter(tags=["mcp"])
_BODY = {
    "requestBody": {
        "required": False,
        "description": "A JSON-RPC 2.0 message of the MCP streamable HTTP transport",
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}
_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A JSON-RPC response, or a stream of them (`text/event-stream`)",
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "text/event-stream": {"schema": {"type": "string"}},
        },
    },
    202: {"description": "A notification or response was accepted"},
    **problem_responses(401, 404, 405, 406, 422),
}


class _Transport(Response):
    """Hands the request to the MCP transport, which answers it itself (JSON or SSE)."""

    def __init__(self, server: McpServer, caller: Caller) -> None:
        super().__init__()
        self._server = server
        self._caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._server.handle(scope, receive, send, self._caller)


def _server(request: Request) -> McpServer:
    server: McpServer = request.app.state.mcp_server
    return server


async def _mcp(request: Request, container: ContainerDep, principal: DoorPrincipal) -> Response:
    door = Door(container, principal, "mcp")
    return _Transport(_server(request), Caller(door, base_url(request)))


async def _agent_mcp(
    agent_id: uuid.UUID, request: Request, container: ContainerDep, principal: DoorPrincipal
) -> Response:
    door = Door(container, principal, "mcp")
    await door.agent(agent_id)
    return _Transport(_server(request), Caller(door, base_url(request), agent_id))


_POST_DOC = (
    "MCP streamable HTTP, stateless: `tools/list` lists one tool per agent the caller may use, `tools/call` runs "
    "a turn of it. A stateless server has no GET stream and no session to DELETE: those answer 405. "
    "Transport errors (a wrong `Accept`, a body that is no JSON-RPC message) are the transport's JSON-RPC "
    "error objects; problem+json is for the HTTP layer (auth, agent)."
)
router.add_api_route(
    "/mcp", _mcp, methods=["POST"], operation_id="mcp", response_model=None, openapi_extra=_BODY,
    responses=_ANSWERS, description=_POST_DOC, summary="MCP",
)  # fmt: skip
router.add_api_route(
    "/agents/{agent_id}/mcp", _agent_mcp, methods=["POST"], operation_id="agentMcp", response_model=None,
    openapi_extra=_BODY, responses=_ANSWERS, description=f"{_POST_DOC} Only this agent's tool.",
    summary="MCP of one agent",
)  # fmt: skip


@router.get(
    METADATA_PATH,
    operation_id="oauthProtectedResource",
    responses=problem_responses(404),
)
async def protected_resource(request: Request, container: ContainerDep) -> dict[str, Any]:
    """OAuth 2.0 protected resource metadata (RFC 9728) for MCP clients, when an issuer is configured."""
    issuer = container.settings.auth.issuer
    if not issuer:
        raise NotFound("No authorization server is configured (AUTH_ISSUER)")
    return {
        "resource": f"{base_url(request)}/mcp",
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "agent-runtime",
    }
