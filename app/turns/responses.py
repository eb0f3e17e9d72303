"""What the routers that answer with a turn share: its responses, content negotiation, the service."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from app.deps import ContainerDep, CurrentPrincipal
from app.runtime.events import SSE_RESPONSE
from app.turns.service import TurnService

TURN_RESPONSES: dict[int | str, dict[str, Any]] = {**SSE_RESPONSE, 200: {**SSE_RESPONSE[200]}}
TURN_RESPONSES[200]["content"] = {
    **SSE_RESPONSE[200]["content"],
    "application/json": {"schema": {"$ref": "#/components/schemas/Turn"}},
}


def wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/event-stream" not in accept


async def get_turn_service(container: ContainerDep, principal: CurrentPrincipal) -> TurnService:
    return TurnService(container, principal)


TurnServiceDep = Annotated[TurnService, Depends(get_turn_service)]
