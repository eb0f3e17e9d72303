"""The bearer of a protocol door: the REST API's tokens, with the OAuth resource metadata on a 401."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.auth.principal import Principal
from app.deps import ContainerDep, get_principal
from app.errors import Unauthorized

METADATA_PATH = "/.well-known/oauth-protected-resource"
_bearer = HTTPBearer(auto_error=False, description="The same JWT as the REST API.")


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


async def door_principal(
    request: Request,
    container: ContainerDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """401 with `WWW-Authenticate` (naming the resource metadata when an issuer is configured)."""
    try:
        return await get_principal(container, credentials)
    except Unauthorized as exc:
        challenge = "Bearer"
        if container.settings.auth.issuer:
            challenge += f' resource_metadata="{base_url(request)}{METADATA_PATH}"'
        raise Unauthorized(exc.detail, headers={"WWW-Authenticate": challenge}) from None


DoorPrincipal = Annotated[Principal, Depends(door_principal)]
