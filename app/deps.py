"""Typed FastAPI dependencies: the application state and its narrow parts, the unit of work, the caller."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.auth.principal import Principal
from app.auth.signing import SigningKeys
from app.auth.stream_token import verify_stream_token
from app.container import AppState
from app.core.db import unit_of_work
from app.core.logs import bind
from app.core.sql import Sql
from app.errors import Forbidden, Unauthorized
from app.settings import Settings

_bearer = HTTPBearer(auto_error=False, description="A JWT with `sub`, `tenant_id` and optional `roles`.")


async def get_container(request: Request) -> AppState:
    """Async on purpose: FastAPI runs plain `def` dependencies in a worker thread."""
    state: AppState = request.app.state.container
    return state


ContainerDep = Annotated[AppState, Depends(get_container)]
AppStateDep = ContainerDep


async def get_app_settings(state: ContainerDep) -> Settings:
    return state.settings


async def get_engine(state: ContainerDep) -> AsyncEngine:
    return state.engine


async def get_sql(state: ContainerDep) -> Sql:
    return state.sql


async def get_signing(state: ContainerDep) -> SigningKeys:
    return state.signing


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
EngineDep = Annotated[AsyncEngine, Depends(get_engine)]
SqlDep = Annotated[Sql, Depends(get_sql)]
SigningDep = Annotated[SigningKeys, Depends(get_signing)]


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


async def get_turn_events_principal(
    container: ContainerDep,
    turn_id: uuid.UUID,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    access_token: Annotated[
        str | None,
        Query(description="A stream token of this turn (`POST /turns/{turn_id}/stream-token`), for `EventSource`."),
    ] = None,
) -> Principal:
    """The bearer, or a stream token of this very turn: the one route that reads `?access_token=`."""
    if access_token is None:
        return await get_principal(container, credentials)
    principal = verify_stream_token(container.signing, access_token, turn_id, issuer=container.settings.signing.issuer)
    bind(tenant_id=principal.tenant_id)
    return principal


TurnEventsPrincipal = Annotated[Principal, Depends(get_turn_events_principal)]


async def require_admin(principal: CurrentPrincipal) -> Principal:
    if not principal.is_admin:
        raise Forbidden("This operation needs role admin")
    return principal


AdminPrincipal = Annotated[Principal, Depends(require_admin)]
