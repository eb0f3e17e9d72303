"""A2A endpoints: HTTP only (auth, the agent, then the SDK's JSON-RPC application); tasks are in `handler.py`."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from a2a.server.apps.jsonrpc.starlette_app import A2AStarletteApplication
from a2a.types import JSONParseError, JSONRPCErrorResponse
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from app.core.problems import problem_responses
from app.core.sse import SSE_MEDIA_TYPE
from app.deps import ContainerDep
from app.interop.a2a_server.cards import card_of
from app.interop.a2a_server.handler import TurnTasks
from app.interop.a2a_server.push import PushConfigs
from app.interop.auth import DoorPrincipal, base_url
from app.interop.door import Door

router = APIRouter(tags=["a2a"])
_SDK_LOG = "a2a.server.apps.jsonrpc.jsonrpc_app"


class _ClientMistakes(logging.Filter):
    """The SDK logs each request that fails JSON-RPC validation as an error with its traceback; it is a
    client's mistake, answered with -32600 / -32602, not a fault of ours (its other errors stay logged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to validate")


logging.getLogger(_SDK_LOG).addFilter(_ClientMistakes())
_OBJECT = {"type": "object", "additionalProperties": True}


@router.get("/a2a", operation_id="listA2aAgents", responses=problem_responses(401))
async def directory(request: Request, container: ContainerDep, principal: DoorPrincipal) -> dict[str, Any]:
    """The tenant's directory: the agent card of every agent the caller may use."""
    door = Door(container, principal, "a2a")
    push = container.settings.webhooks.enabled
    cards = [card_of(agent, base_url(request), push_notifications=push) for agent in await door.agents()]
    return {"items": [card.model_dump(mode="json", by_alias=True, exclude_none=True) for card in cards]}


@router.get(
    "/a2a/{agent_id}/.well-known/agent-card.json",
    operation_id="getA2aAgentCard",
    responses=problem_responses(401, 404, 422),
)
async def agent_card(
    agent_id: uuid.UUID, request: Request, container: ContainerDep, principal: DoorPrincipal
) -> dict[str, Any]:
    """The agent's A2A agent card (version = the agent's current version)."""
    agent = await Door(container, principal, "a2a").agent(agent_id)
    card = card_of(agent, base_url(request), push_notifications=container.settings.webhooks.enabled)
    return card.model_dump(mode="json", by_alias=True, exclude_none=True)


@router.post(
    "/a2a/{agent_id}",
    operation_id="a2aRpc",
    response_model=None,
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A JSON-RPC 2.0 request: `message/send`, `message/stream`, `tasks/get`, "
            "`tasks/cancel`, `tasks/resubscribe` or `tasks/pushNotificationConfig/set|get|list|delete`",
            "content": {"application/json": {"schema": _OBJECT}},
        }
    },
    responses={
        200: {
            "description": "A JSON-RPC response (errors too: A2A codes such as -32001 task not found), "
            "or for the streaming methods a stream of them",
            "content": {"application/json": {"schema": _OBJECT}, SSE_MEDIA_TYPE: {"schema": {"type": "string"}}},
        },
        **problem_responses(401, 404, 422),
    },
)
async def rpc(agent_id: uuid.UUID, request: Request, container: ContainerDep, principal: DoorPrincipal) -> Response:
    """A2A JSON-RPC for one agent: a task is a turn, `contextId` a session. Protocol errors are JSON-RPC
    error objects (HTTP 200), as A2A clients expect; problem+json is for the HTTP layer (auth, agent)."""
    door = Door(container, principal, "a2a")
    agent = await door.agent(agent_id)
    try:
        await request.json()  # read once here (Starlette keeps it): the SDK prints a traceback for bad JSON
    except ValueError:
        error = JSONRPCErrorResponse(id=None, error=JSONParseError())
        return JSONResponse(error.model_dump(mode="json", exclude_none=True))
    enabled = container.settings.webhooks.enabled
    push = PushConfigs(container, principal) if enabled else None
    application = A2AStarletteApplication(
        agent_card=card_of(agent, base_url(request), push_notifications=enabled),
        http_handler=TurnTasks(door, agent, push),
    )
    return await application._handle_requests(request)
