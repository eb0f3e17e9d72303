from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response, status

from app.core.pagination import MAX_LIMIT, Page
from app.core.problems import problem_responses
from app.deps import ContainerDep, CurrentPrincipal, SessionDep
from app.sessions import schemas
from app.sessions.service import SessionService, idle_ttl, new_session

router = APIRouter(prefix="/sessions", tags=["sessions"], responses=problem_responses(401, 422))


async def get_service(db: SessionDep, principal: CurrentPrincipal, container: ContainerDep) -> SessionService:
    return SessionService(db, principal, ttl=idle_ttl(container))


Service = Annotated[SessionService, Depends(get_service)]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]


@router.post(
    "",
    operation_id="createSession",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Session,
    responses={
        200: {"model": schemas.Session, "description": "the caller's session with this external_id"},
        **problem_responses(404, 409),
    },
)
async def create_session(
    body: schemas.SessionCreate, container: ContainerDep, principal: CurrentPrincipal, response: Response
) -> schemas.Session:
    """With an `external_id` this caller already used for the agent: 200 and that session."""
    session, created = await new_session(container, principal, body)
    response.headers["Location"] = f"/sessions/{session.id}"
    if not created:
        response.status_code = status.HTTP_200_OK
    return session


@router.get("", operation_id="listSessions", response_model=Page[schemas.Session], responses=problem_responses(400))
async def list_sessions(
    service: Service, agent_id: uuid.UUID | None = None, limit: Limit = 50, cursor: str | None = None
) -> Page[schemas.Session]:
    return await service.page(agent_id=agent_id, limit=limit, cursor=cursor)


@router.get(
    "/{session_id}",
    operation_id="getSession",
    response_model=schemas.Session,
    responses=problem_responses(404),
)
async def get_session(session_id: uuid.UUID, service: Service) -> schemas.Session:
    return await service.read(session_id)


@router.patch(
    "/{session_id}",
    operation_id="updateSession",
    response_model=schemas.Session,
    responses=problem_responses(404),
)
async def update_session(session_id: uuid.UUID, body: schemas.SessionUpdate, service: Service) -> schemas.Session:
    """Rename the session (`title`); a closed or expired session can be renamed too."""
    return schemas.Session.model_validate(await service.rename(session_id, body))


@router.get(
    "/{session_id}/messages",
    operation_id="listSessionMessages",
    response_model=schemas.MessagePage,
    responses=problem_responses(400, 404),
)
async def list_messages(
    session_id: uuid.UUID,
    service: Service,
    limit: Limit = 100,
    cursor: str | None = None,
    include: Annotated[
        Literal["superseded"] | None,
        Query(description="`superseded`: also the messages of turns that were regenerated (kept, out of the prompt)"),
    ] = None,
) -> schemas.MessagePage:
    """The history in order: each message with the `turn_id` that wrote it (and `superseded_by_turn_id`)."""
    return await service.messages_page(session_id, limit=limit, cursor=cursor, superseded=include == "superseded")
