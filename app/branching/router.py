"""Branching a conversation: fork a session at a message, regenerate its latest turn."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Response, status

from app.branching.forks import ForkService
from app.branching.regenerate import regenerate
from app.core.problems import problem_responses
from app.deps import ContainerDep, CurrentPrincipal, SessionDep
from app.sessions import schemas as session_schemas
from app.sessions.service import SessionService, idle_ttl
from app.turns import schemas as turn_schemas
from app.turns.responses import (
    ACCEPTED_RESPONSE,
    TURN_ACCEPT,
    TURN_RESPONSES,
    PreferHeader,
    TurnRepresentation,
    TurnServiceDep,
    started,
)

router = APIRouter(responses=problem_responses(401, 404, 422))


def _coded(status_code: int, codes: str) -> dict[int | str, dict[str, Any]]:
    """A problem response whose description names the `code`s it carries (docs/branching.md)."""
    entry = problem_responses(status_code)[status_code]
    return {status_code: {**entry, "description": f"{entry['description']}: {codes}"}}


FORK_PROBLEMS = {
    **_coded(409, "`turn_running` (the point is inside an unfinished turn), `external_id_in_use`"),
    **_coded(422, "`message_not_in_session`, `message_superseded`, `message_not_forkable`, or an invalid body"),
}
REGENERATE_PROBLEMS = {
    **_coded(409, "`turn_running`, `turn_not_latest`, `turn_superseded`, `session_closed`, `session_expired`"),
    **problem_responses(406, 429),
}


@router.post(
    "/sessions/{session_id}/fork",
    operation_id="forkSession",
    tags=["sessions"],
    status_code=status.HTTP_201_CREATED,
    response_model=session_schemas.Session,
    responses=FORK_PROBLEMS,
)
async def fork_session(
    session_id: uuid.UUID,
    body: session_schemas.SessionFork,
    db: SessionDep,
    principal: CurrentPrincipal,
    container: ContainerDep,
    response: Response,
) -> session_schemas.Session:
    """A new session of the same owner whose history is this one's up to and including `at_message_id`
    (an assistant message keeps its tool results), pinned to `agent_version` (default: this session's pin).

    422 `message_not_in_session`, `message_superseded` (a regenerated turn's message) or
    `message_not_forkable` (a tool result); 409 `turn_running` for a message of an unfinished turn (or
    the whole history while a turn is unfinished), `external_id_in_use`."""
    fork = await ForkService(SessionService(db, principal, ttl=idle_ttl(container))).fork(session_id, body)
    response.headers["Location"] = f"/sessions/{fork.id}"
    return fork


@router.post(
    "/turns/{turn_id}/regenerate",
    operation_id="regenerateTurn",
    tags=["turns"],
    response_model=None,
    responses={**TURN_RESPONSES, **ACCEPTED_RESPONSE, **REGENERATE_PROBLEMS},
    openapi_extra=TURN_ACCEPT,
)
async def regenerate_turn(
    turn_id: uuid.UUID,
    body: turn_schemas.TurnRegenerate,
    representation: TurnRepresentation,
    service: TurnServiceDep,
    prefer: PreferHeader = None,
) -> Response:
    """Run a new turn in place of the session's latest ended turn, with its input (or `input`), mode and limits.

    The old turn's messages become superseded: kept (`?include=superseded`), out of the history and
    the prompt; its events, receipts and usage stay. Answers like `createTurn`. 409 `turn_running`
    while a turn of the session is unfinished, `turn_not_latest` for an earlier turn (fork the session
    at a message before it instead), `turn_superseded` for a turn already regenerated."""
    return await started(service, await regenerate(service, turn_id, body), representation, prefer)
