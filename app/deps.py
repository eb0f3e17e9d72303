"""Typed FastAPI dependencies: the container, the request's unit of work, the caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.container import Container
from app.core.db import unit_of_work
from app.core.logs import bind
from app.errors import Forbidden, Unauthorized

_bearer = HTTPBearer(auto_error=False, description="A JWT with `sub`, `tenant_id` and optional `roles`.")


async def get_container(request: Request) -> Container:
    """Async on purpose: FastAPI runs plain `def` dependencies in a worker thread."""
    container: Container = request.app.state.container
    return container


ContainerDep = Annotated[Container, Depends(get_container)]


async def get_db(container: ContainerDep) -> AsyncIterator[AsyncSession]:
    """The request owns the transaction: commit on success, roll back on error.

    Scoped to the endpoint function (not the request), so the commit happens before the response
    is sent: a client never reads a 201 for a row that is not committed yet.
    """
    async with unit_of_work(container.session_factory) as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_db, scope="function")]


async def get_principal(
    container: ContainerDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized("Missing bearer token")
    principal = await container.verifier.verify(credentials.credentials)
    bind(tenant_id=principal.tenant_id)
    return principal


CurrentPrincipal = Annotated[Principal, Depends(get_principal)]


async def require_admin(principal: CurrentPrincipal) -> Principal:
    if not principal.is_admin:
        raise Forbidden("This operation needs role admin")
    return principal


AdminPrincipal = Annotated[Principal, Depends(require_admin)]
