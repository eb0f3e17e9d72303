from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response, status

from app.core.problems import problem_responses
from app.credentials import schemas
from app.credentials.service import CredentialService
from app.deps import AdminPrincipal, ContainerDep, SessionDep

router = APIRouter(prefix="/credentials", tags=["credentials"], responses=problem_responses(401, 403, 422))


async def get_service(db: SessionDep, principal: AdminPrincipal, container: ContainerDep) -> CredentialService:
    return CredentialService(db, principal, container.secret_box, container.settings.providers.allowed_hosts)


Service = Annotated[CredentialService, Depends(get_service)]
Name = Annotated[str, Path(pattern=schemas.CREDENTIAL_NAME, description="Lower-case letters, digits, `_.-`.")]


@router.get("", operation_id="listCredentials", response_model=schemas.CredentialPage)
async def list_credentials(service: Service) -> schemas.CredentialPage:
    """The tenant's provider keys as provider, base_url, last 4 and fingerprint (never the key)."""
    return await service.list()


@router.patch("", operation_id="updateCredentialSettings", response_model=schemas.CredentialPage)
async def update_settings(body: schemas.CredentialSettingsUpdate, service: Service) -> schemas.CredentialPage:
    """`byok_only: true` makes every turn of the tenant use its own credentials, never the operator's keys."""
    return await service.update_settings(body)


@router.put(
    "/{name}",
    operation_id="putCredential",
    response_model=schemas.CredentialView,
    responses={201: {"model": schemas.CredentialView, "description": "Created"}, **problem_responses(409)},
)
async def put_credential(
    name: Name, body: schemas.CredentialPut, service: Service, response: Response
) -> schemas.CredentialView:
    """Store or replace a provider key (encrypted at rest); 201 when created, 200 when replaced."""
    view, created = await service.put(name, body)
    if created:
        response.status_code = status.HTTP_201_CREATED
        response.headers["Location"] = f"/credentials/{name}"
    return view


@router.delete(
    "/{name}",
    operation_id="deleteCredential",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404),
)
async def delete_credential(name: Name, service: Service) -> Response:
    """The next turn that would have used it resolves again (and fails if nothing else applies)."""
    await service.delete(name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
