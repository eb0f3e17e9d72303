"""What the routers that answer with a turn share: its responses, content negotiation, the service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import Response

from app.core.negotiation import negotiate
from app.core.sse import SSE_MEDIA_TYPE, encode_frame, event_stream_response, retry_frame
from app.deps import ContainerDep, CurrentPrincipal, TurnEventsPrincipal
from app.runtime.engine import Started
from app.runtime.port.events import SSE_RESPONSE, Followed, Reconnect
from app.turns.schemas import Turn
from app.turns.service import TurnService

TURN_RESPONSES: dict[int | str, dict[str, Any]] = {**SSE_RESPONSE, 200: {**SSE_RESPONSE[200]}}
TURN_RESPONSES[200]["content"] = {
    **SSE_RESPONSE[200]["content"],
    "application/json": {"schema": {"$ref": "#/components/schemas/Turn"}},
}


ACCEPTED_RESPONSE: dict[int | str, dict[str, Any]] = {
    202: {
        "description": (
            "`Prefer: respond-async`, or `Accept: application/json` when this replica shut down before the "
            "turn ended (another replica continues it): the turn as it is now; follow it at `Location`'s `/events`"
        ),
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Turn"}}},
        "headers": {"Location": {"schema": {"type": "string"}, "description": "`/turns/{turn_id}`"}},
    }
}
PreferHeader = Annotated[
    str | None,
    Header(description="`respond-async` (RFC 7240): answer 202 with the turn at once instead of streaming it."),
]


async def sse_frames(followed: AsyncIterator[Followed]) -> AsyncIterator[bytes]:
    """A turn's events as SSE, encoded here and only here: events that came together as one chunk, the
    cut of a handed-over run as a `retry:` (the client reconnects with `Last-Event-ID`)."""
    async with aclosing(followed) as items:  # type: ignore[type-var]
        async for item in items:
            if isinstance(item, Reconnect):
                yield retry_frame(item.after_ms)
            else:
                yield b"".join(encode_frame(event.seq, event.type, event.data) for event in item)


def event_stream(followed: AsyncIterator[Followed], ping_seconds: float) -> Response:
    return event_stream_response(sse_frames(followed), ping_seconds=ping_seconds)


def wants_async(prefer: str | None) -> bool:
    return prefer is not None and any(
        part.split("=", 1)[0].strip().lower() == "respond-async" for part in prefer.split(",")
    )


def accepted(turn: Turn, *, preferred: bool = True) -> Response:
    """202 with the turn and where to find it: the client follows `/turns/{id}/events` or waits for a
    webhook. `preferred`: the client asked for it (`Prefer: respond-async`)."""
    headers = {"Location": f"/turns/{turn.id}"}
    if preferred:
        headers["Preference-Applied"] = "respond-async"
    return Response(turn.model_dump_json(), status_code=202, media_type="application/json", headers=headers)


UNFINISHED = ("running", "queued")
"""A turn in these has no outcome yet (`interrupted` has one: it waits for a human's decision)."""


def finished(turn: Turn) -> Response:
    """`Accept: application/json`: 200 with the turn its run here ended, or 202 (as `accepted`) if the
    run stopped before the turn ended — this replica shut down and handed the turn over (or another
    replica took it): it goes on elsewhere, and a 200 with a `running` turn would read as an answer."""
    if turn.status in UNFINISHED:
        return accepted(turn, preferred=False)
    return Response(turn.model_dump_json(), media_type="application/json")


async def started(service: TurnService, run: Started, representation: str, prefer: str | None) -> Response:
    """How a route answers with a turn it started or resumed: 202 for `Prefer: respond-async`, the finished
    turn for JSON, else the events of this run as SSE."""
    if wants_async(prefer):
        return accepted(await service.get(run.turn_id))
    if wants_json(representation):
        return finished(await service.finished(run.turn_id))
    return event_stream(run.follow(), service.container.settings.http.sse_ping_seconds)


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
