from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response, status

from app.agents import schemas
from app.agents.service import AgentService
from app.core.bounds import INT32_MAX
from app.core.pagination import MAX_LIMIT, Page
from app.core.problems import problem_responses
from app.deps import ContainerDep, CurrentPrincipal, SessionDep

router = APIRouter(prefix="/agents", tags=["agents"], responses=problem_responses(401, 422))


async def get_service(db: SessionDep, principal: CurrentPrincipal, container: ContainerDep) -> AgentService:
    return AgentService.of(db, principal, container)


Service = Annotated[AgentService, Depends(get_service)]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]


@router.post("", operation_id="createAgent", status_code=status.HTTP_201_CREATED, response_model=schemas.Agent)
async def create_agent(body: schemas.AgentCreate, service: Service, response: Response) -> schemas.Agent:
    agent = await service.create(body)
    response.headers["Location"] = f"/agents/{agent.id}"
    return agent


@router.get("", operation_id="listAgents", response_model=Page[schemas.Agent], responses=problem_responses(400))
async def list_agents(service: Service, limit: Limit = 50, cursor: str | None = None) -> Page[schemas.Agent]:
    return await service.page(limit=limit, cursor=cursor)


@router.get("/{agent_id}", operation_id="getAgent", response_model=schemas.Agent, responses=problem_responses(404))
async def get_agent(agent_id: uuid.UUID, service: Service) -> schemas.Agent:
    return await service.get(agent_id)


@router.patch("/{agent_id}", operation_id="updateAgent", response_model=schemas.Agent, responses=problem_responses(404))
async def update_agent(agent_id: uuid.UUID, body: schemas.AgentUpdate, service: Service) -> schemas.Agent:
    return await service.update(agent_id, body)


@router.delete(
    "/{agent_id}",
    operation_id="archiveAgent",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404),
)
async def archive_agent(agent_id: uuid.UUID, service: Service) -> Response:
    await service.archive(agent_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{agent_id}/versions",
    operation_id="listAgentVersions",
    response_model=Page[schemas.AgentVersion],
    responses=problem_responses(404),
)
async def list_versions(agent_id: uuid.UUID, service: Service) -> Page[schemas.AgentVersion]:
    versions = await service.list_versions(agent_id)
    return Page(items=[schemas.AgentVersion.model_validate(v) for v in versions])


@router.get(
    "/{agent_id}/versions/{version}",
    operation_id="getAgentVersion",
    response_model=schemas.AgentVersion,
    responses=problem_responses(404),
)
async def get_version(
    agent_id: uuid.UUID, version: Annotated[int, Path(ge=1, le=INT32_MAX)], service: Service
) -> schemas.AgentVersion:
    return schemas.AgentVersion.model_validate(await service.version(agent_id, version))
