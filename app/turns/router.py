from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Header, Query, status
from fastapi.responses import Response

from app.core.bounds import INT32_MAX
from app.core.pagination import MAX_LIMIT
from app.core.problems import problem_responses
from app.core.sse import EventStreamResponse
from app.runtime.port.events import SSE_RESPONSE
from app.turns import schemas
from app.turns.responses import (
    ACCEPTED_RESPONSE,
    STREAM_ACCEPT,
    TURN_ACCEPT,
    TURN_RESPONSES,
    EventsServiceDep,
    PreferHeader,
    StreamRepresentation,
    TurnRepresentation,
    TurnServiceDep,
    event_stream,
    started,
)

router = APIRouter(tags=["turns"], responses=problem_responses(401, 404, 422))


Service = TurnServiceDep


@router.post(
    "/sessions/{session_id}/turns",
    operation_id="createTurn",
    response_model=None,
    responses={**TURN_RESPONSES, **ACCEPTED_RESPONSE, **problem_responses(406, 409, 429)},
    openapi_extra=TURN_ACCEPT,
)
async def create_turn(
    session_id: uuid.UUID,
    body: schemas.TurnCreate,
    representation: TurnRepresentation,
    service: Service,
    prefer: PreferHeader = None,
) -> Response:
    """Run one turn. Streams its events (default), answers the finished turn for `Accept: application/json`,
    or the started turn at once (202) for `Prefer: respond-async` — and, without the `Prefer`, when this
    replica shuts down before the turn ends (another replica continues it)."""
    return await started(service, await service.start(session_id, body), representation, prefer)


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
    service: EventsServiceDep,
    _: StreamRepresentation,
    after: Annotated[int | None, Query(ge=0, le=INT32_MAX, description="Replay events with seq > after")] = None,
    last_event_id: Annotated[int | None, Header(ge=0, le=INT32_MAX)] = None,
) -> Response:
    """Replay after `Last-Event-ID` (or `?after=`), then follow live up to the next `turn.ended`."""
    start = last_event_id if last_event_id is not None else (after or 0)
    await service.get(turn_id)
    ping = service.container.settings.http.sse_ping_seconds
    return event_stream(service.follow(turn_id, start), ping)


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


@router.delete(
    "/sessions/{session_id}",
    operation_id="closeSession",
    status_code=status.HTTP_204_NO_CONTENT,
    tags=["sessions"],
    responses=problem_responses(404),
)
async def close_session(session_id: uuid.UUID, service: Service) -> Response:
    """Close the session: it takes no new turns, and a turn still active in it is cancelled."""
    await service.close_session(session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
