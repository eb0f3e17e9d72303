"""What the routers that answer with a turn share: its responses, content negotiation, the service."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import Response

from app.deps import ContainerDep, CurrentPrincipal
from app.runtime.events import SSE_RESPONSE
from app.turns.schemas import Turn
from app.turns.service import TurnService

TURN_RESPONSES: dict[int | str, dict[str, Any]] = {**SSE_RESPONSE, 200: {**SSE_RESPONSE[200]}}
TURN_RESPONSES[200]["content"] = {
    **SSE_RESPONSE[200]["content"],
    "application/json": {"schema": {"$ref": "#/components/schemas/Turn"}},
}


ACCEPTED_RESPONSE: dict[int | str, dict[str, Any]] = {
    202: {
        "description": "`Prefer: respond-async`: the turn as it is now; follow it at `Location`'s `/events`",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Turn"}}},
        "headers": {"Location": {"schema": {"type": "string"}, "description": "`/turns/{turn_id}`"}},
    }
}
PreferHeader = Annotated[
    str | None,
    Header(description="`respond-async` (RFC 7240): answer 202 with the turn at once instead of streaming it."),
]


def wants_async(prefer: str | None) -> bool:
    return prefer is not None and any(
        part.split("=", 1)[0].strip().lower() == "respond-async" for part in prefer.split(",")
    )


def accepted(turn: Turn) -> Response:
    """202 with the turn and where to find it: the client follows `/turns/{id}/events` or waits for a webhook."""
    headers = {"Location": f"/turns/{turn.id}", "Preference-Applied": "respond-async"}
    return Response(turn.model_dump_json(), status_code=202, media_type="application/json", headers=headers)


def wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/event-stream" not in accept


async def get_turn_service(container: ContainerDep, principal: CurrentPrincipal) -> TurnService:
    return TurnService(container, principal)


TurnServiceDep = Annotated[TurnService, Depends(get_turn_service)]
