"""What the routers that answer with a turn share: its responses, content negotiation, the service."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from app.core.negotiation import negotiate
from app.core.sse import SSE_MEDIA_TYPE
from app.deps import ContainerDep, CurrentPrincipal, TurnEventsPrincipal
from app.runtime.events import SSE_RESPONSE
from app.turns.service import TurnService

TURN_RESPONSES: dict[int | str, dict[str, Any]] = {**SSE_RESPONSE, 200: {**SSE_RESPONSE[200]}}
TURN_RESPONSES[200]["content"] = {
    **SSE_RESPONSE[200]["content"],
    "application/json": {"schema": {"$ref": "#/components/schemas/Turn"}},
}


TURN_MEDIA_TYPES = (SSE_MEDIA_TYPE, "application/json")


def accept_parameter(offers: tuple[str, ...], description: str) -> dict[str, Any]:
    """`Accept` declared in OpenAPI (so a generated client can choose), read raw by the negotiation."""
    return {
        "parameters": [
            {
                "name": "Accept",
                "in": "header",
                "required": False,
                "description": description,
                "schema": {"type": "string", "enum": list(offers)},
            }
        ]
    }


TURN_ACCEPT = accept_parameter(
    TURN_MEDIA_TYPES,
    "`text/event-stream` (the default) streams the events; `application/json` waits for the finished turn. "
    "An `Accept` that allows neither answers 406 and starts nothing.",
)
STREAM_ACCEPT = accept_parameter((SSE_MEDIA_TYPE,), "This route answers only `text/event-stream` (else 406).")


async def turn_representation(request: Request) -> str:
    """Negotiated before the route's body runs, so a 406 starts, decides or reads nothing."""
    return negotiate(request.headers.get("accept"), TURN_MEDIA_TYPES)


async def stream_representation(request: Request) -> str:
    return negotiate(request.headers.get("accept"), (SSE_MEDIA_TYPE,))


TurnRepresentation = Annotated[str, Depends(turn_representation)]
StreamRepresentation = Annotated[str, Depends(stream_representation)]


def wants_json(representation: str) -> bool:
    return representation == "application/json"


async def get_turn_service(container: ContainerDep, principal: CurrentPrincipal) -> TurnService:
    return TurnService(container, principal)


TurnServiceDep = Annotated[TurnService, Depends(get_turn_service)]


async def get_events_service(container: ContainerDep, principal: TurnEventsPrincipal) -> TurnService:
    """For `GET /turns/{turn_id}/events` only: the bearer, or a stream token of that turn."""
    return TurnService(container, principal)


EventsServiceDep = Annotated[TurnService, Depends(get_events_service)]
