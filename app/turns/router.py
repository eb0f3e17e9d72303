from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response

from app.core.negotiation import negotiate
from app.core.pagination import MAX_LIMIT
from app.core.problems import problem_responses
from app.core.sse import SSE_MEDIA_TYPE, EventStreamResponse, event_stream_response
from app.deps import ContainerDep, CurrentPrincipal, TurnEventsPrincipal
from app.turns import schemas
from app.turns.events import SSE_RESPONSE
from app.turns.service import TurnService

router = APIRouter(tags=["turns"], responses=problem_responses(401, 404, 422))


async def get_service(container: ContainerDep, principal: CurrentPrincipal) -> TurnService:
    return TurnService(container, principal)


Service = Annotated[TurnService, Depends(get_service)]


async def get_events_service(container: ContainerDep, principal: TurnEventsPrincipal) -> TurnService:
    return TurnService(container, principal)


EventsService = Annotated[TurnService, Depends(get_events_service)]
TurnServiceDep = Service
TURN_RESPONSES = {**SSE_RESPONSE, 200: {**SSE_RESPONSE[200]}}
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
    """Negotiated before the route's body runs, so a 406 starts nothing."""
    return negotiate(request.headers.get("accept"), TURN_MEDIA_TYPES)


async def stream_representation(request: Request) -> str:
    return negotiate(request.headers.get("accept"), (SSE_MEDIA_TYPE,))


TurnRepresentation = Annotated[str, Depends(turn_representation)]
StreamRepresentation = Annotated[str, Depends(stream_representation)]


def wants_json(representation: str) -> bool:
    return representation == "application/json"


@router.post(
    "/sessions/{session_id}/turns",
    operation_id="createTurn",
    response_model=None,
    responses={**TURN_RESPONSES, **problem_responses(406, 409)},
    openapi_extra=TURN_ACCEPT,
)
async def create_turn(
    session_id: uuid.UUID, body: schemas.TurnCreate, representation: TurnRepresentation, service: Service
) -> Response:
    """Run one turn. Streams its events (default), or answers the finished turn for `Accept: application/json`."""
    turn_id, stream = await service.start(session_id, body)
    if wants_json(representation):
        return Response((await service.finished(turn_id)).model_dump_json(), media_type="application/json")
    ping = service.container.settings.http.sse_ping_seconds
    return event_stream_response(stream.follow(0), ping_seconds=ping)


@router.get("/sessions/{session_id}/turns", operation_id="listTurns", response_model=schemas.TurnPage)
async def list_turns(
    session_id: uuid.UUID,
    service: Service,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: str | None = None,
) -> schemas.TurnPage:
    return await service.list(session_id, limit=limit, cursor=cursor)


@router.get("/turns/{turn_id}", operation_id="getTurn", response_model=schemas.Turn)
async def get_turn(turn_id: uuid.UUID, service: Service) -> schemas.Turn:
    return await service.get(turn_id)


@router.get(
    "/turns/{turn_id}/events",
    operation_id="streamTurnEvents",
    response_model=None,
    response_class=EventStreamResponse,
    responses={**SSE_RESPONSE, **problem_responses(406)},
    openapi_extra=STREAM_ACCEPT,
)
async def turn_events(
    turn_id: uuid.UUID,
    service: EventsService,
    _: StreamRepresentation,
    after: Annotated[int | None, Query(ge=0, description="Replay events with seq > after")] = None,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> Response:
    """Replay after `Last-Event-ID` (or `?after=`), then follow live up to the next `turn.ended`."""
    start = last_event_id if last_event_id is not None else (after or 0)
    await service.get(turn_id)
    ping = service.container.settings.http.sse_ping_seconds
    return event_stream_response(service.follow(turn_id, start), ping_seconds=ping)


@router.post(
    "/turns/{turn_id}/stream-token",
    operation_id="createStreamToken",
    response_model=schemas.StreamToken,
)
async def create_stream_token(turn_id: uuid.UUID, service: Service) -> schemas.StreamToken:
    """A token (≤ 60 s) that only `GET /turns/{turn_id}/events?access_token=…` accepts, for `EventSource`."""
    return await service.stream_token(turn_id)


@router.post(
    "/turns/{turn_id}/cancel",
    operation_id="cancelTurn",
    response_model=schemas.Turn,
    responses=problem_responses(409),
)
async def cancel_turn(turn_id: uuid.UUID, service: Service) -> schemas.Turn:
    return await service.cancel(turn_id)
