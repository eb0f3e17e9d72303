from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from app.core.problems import problem_responses
from app.deps import CurrentPrincipal, SessionDep
from app.schedules import schemas
from app.schedules.service import ScheduleService

router = APIRouter(tags=["schedules"], responses=problem_responses(401, 422))


async def _service(db: SessionDep, principal: CurrentPrincipal, request: Request) -> ScheduleService:
    minimum = request.app.state.settings.schedule.min_interval_seconds
    return ScheduleService(db, principal, min_interval_seconds=minimum)


Service = Annotated[ScheduleService, Depends(_service)]


@router.post(
    "/schedules",
    operation_id="createSchedule",
    status_code=201,
    response_model=schemas.ScheduleOut,
    responses=problem_responses(404, 409),
)
async def create_schedule(body: schemas.ScheduleCreate, service: Service) -> schemas.ScheduleOut:
    """Run the agent with `input` on every tick of `cron` in `timezone`, as the caller."""
    return await service.create(body)


@router.get("/schedules", operation_id="listSchedules", response_model=schemas.SchedulePage)
async def list_schedules(
    service: Service,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> schemas.SchedulePage:
    return await service.list(limit=limit, cursor=cursor)


@router.get(
    "/schedules/{schedule_id}",
    operation_id="getSchedule",
    response_model=schemas.ScheduleOut,
    responses=problem_responses(404),
)
async def get_schedule(schedule_id: uuid.UUID, service: Service) -> schemas.ScheduleOut:
    return await service.get(schedule_id)


@router.get(
    "/schedules/{schedule_id}/firings",
    operation_id="listScheduleFirings",
    response_model=schemas.FiringPage,
    responses=problem_responses(404),
)
async def list_firings(schedule_id: uuid.UUID, service: Service) -> schemas.FiringPage:
    """The schedule's latest firings, newest first: the turn each started (or why it could not)."""
    return await service.firings(schedule_id)


@router.delete(
    "/schedules/{schedule_id}", operation_id="deleteSchedule", status_code=204, responses=problem_responses(404)
)
async def delete_schedule(schedule_id: uuid.UUID, service: Service) -> None:
    await service.delete(schedule_id)
