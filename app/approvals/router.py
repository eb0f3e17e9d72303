from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response

from app.approvals import schemas
from app.approvals.service import ApprovalService
from app.core.pagination import MAX_LIMIT
from app.core.problems import problem_responses
from app.deps import ContainerDep, CurrentPrincipal
from app.runtime.engine import Started
from app.turns.responses import (
    TURN_ACCEPT,
    TURN_RESPONSES,
    PreferHeader,
    TurnRepresentation,
    started,
)
from app.turns.schemas import Turn
from app.turns.service import TurnService

router = APIRouter(tags=["approvals"], responses=problem_responses(401, 404, 422))


async def get_service(container: ContainerDep, principal: CurrentPrincipal) -> ApprovalService:
    return ApprovalService(container, principal)


Service = Annotated[ApprovalService, Depends(get_service)]
DECIDE_RESPONSES = {
    **TURN_RESPONSES,
    202: {
        "model": schemas.StillWaiting | Turn,
        "description": (
            "Recorded; other approvals of the batch still wait (`StillWaiting`) — or, with "
            "`Prefer: respond-async`, the resumed turn at once (`Turn`, with `Location`); also for "
            "`Accept: application/json` when this replica shut down before the turn ended"
        ),
    },
    **problem_responses(406, 409),
}


@router.get("/approvals", operation_id="listApprovals", response_model=schemas.ApprovalPage)
async def list_approvals(
    service: Service,
    status: Literal["pending", "approved", "denied", "expired"] | None = None,
    session_id: uuid.UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: str | None = None,
) -> schemas.ApprovalPage:
    return await service.list(status=status, session_id=session_id, limit=limit, cursor=cursor)


@router.get("/approvals/{approval_id}", operation_id="getApproval", response_model=schemas.Approval)
async def get_approval(approval_id: uuid.UUID, service: Service) -> schemas.Approval:
    return await service.get(approval_id)


@router.post(
    "/approvals/{approval_id}",
    operation_id="decideApproval",
    response_model=None,
    responses=DECIDE_RESPONSES,
    openapi_extra=TURN_ACCEPT,
)
async def decide_approval(
    approval_id: uuid.UUID,
    body: schemas.ApprovalDecision,
    representation: TurnRepresentation,
    service: Service,
    principal: CurrentPrincipal,
    prefer: PreferHeader = None,
) -> Response:
    """Approve or deny one gated call; the last decision of its batch resumes the turn (streamed)."""
    return await _respond(await service.decide(approval_id, body), representation, service, principal, prefer)


@router.post(
    "/turns/{turn_id}/approvals",
    operation_id="decideTurnApprovals",
    response_model=None,
    responses=DECIDE_RESPONSES,
    openapi_extra=TURN_ACCEPT,
)
async def decide_turn_approvals(
    turn_id: uuid.UUID,
    body: schemas.BatchDecision,
    representation: TurnRepresentation,
    service: Service,
    principal: CurrentPrincipal,
    prefer: PreferHeader = None,
) -> Response:
    """Decide several approvals of one turn at once: all are recorded, or none is."""
    return await _respond(await service.decide_batch(turn_id, body), representation, service, principal, prefer)


async def _respond(
    outcome: Started | schemas.StillWaiting,
    representation: str,
    service: ApprovalService,
    principal: CurrentPrincipal,
    prefer: str | None,
) -> Response:
    if isinstance(outcome, schemas.StillWaiting):
        return JSONResponse(outcome.model_dump(mode="json"), status_code=202)
    turns = TurnService(service.container, principal)
    return await started(turns, outcome, representation, prefer)
