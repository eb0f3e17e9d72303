from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response, status

from app.core.problems import problem_responses
from app.deps import CurrentPrincipal, SessionDep
from app.memory import schemas
from app.memory.service import MAX_LIMIT, MemoryService

router = APIRouter(tags=["memory"], responses=problem_responses(401, 403, 404, 422))

Namespace = Annotated[str, Path(pattern=schemas.NAMESPACE_PATTERN, description="`[a-z0-9][a-z0-9_-]{0,63}`")]
Key = Annotated[str, Path(pattern=schemas.KEY_PATTERN, description="`[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}`")]
AgentScope = Annotated[
    uuid.UUID | None,
    Query(description="The agent whose shared memory to use; omitted: the caller's own memory."),
]


async def _service(db: SessionDep, principal: CurrentPrincipal) -> MemoryService:
    return MemoryService(db, principal)


Service = Annotated[MemoryService, Depends(_service)]


@router.get("/memory/{namespace}", operation_id="listMemory", response_model=schemas.MemoryPage)
async def list_memory(
    namespace: Namespace,
    service: Service,
    agent_id: AgentScope = None,
    q: Annotated[str | None, Query(max_length=schemas.MAX_QUERY_CHARS, description="Full-text search")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[str | None, Query(pattern=schemas.KEY_PATTERN)] = None,
) -> schemas.MemoryPage:
    """The namespace's items by key, or with `q` the best full-text matches."""
    return await service.list(namespace, agent_id, query=q, limit=limit, cursor=cursor)


@router.get("/memory/{namespace}/{key}", operation_id="getMemoryItem", response_model=schemas.MemoryItemOut)
async def get_memory_item(
    namespace: Namespace, key: Key, service: Service, agent_id: AgentScope = None
) -> schemas.MemoryItemOut:
    return await service.get(namespace, key, agent_id)


@router.put(
    "/memory/{namespace}/{key}",
    operation_id="putMemoryItem",
    response_model=schemas.MemoryItemOut,
    responses={201: {"model": schemas.MemoryItemOut, "description": "Created"}},
)
async def put_memory_item(
    namespace: Namespace,
    key: Key,
    body: schemas.MemoryPut,
    service: Service,
    response: Response,
    agent_id: AgentScope = None,
) -> schemas.MemoryItemOut:
    """Store a fact (201 when new, 200 when it replaced one)."""
    item, created = await service.put(namespace, key, body, agent_id)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return item


@router.delete("/memory/{namespace}/{key}", operation_id="deleteMemoryItem", status_code=204)
async def delete_memory_item(namespace: Namespace, key: Key, service: Service, agent_id: AgentScope = None) -> None:
    await service.delete(namespace, key, agent_id)
