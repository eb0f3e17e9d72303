from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status

from app.core.pagination import MAX_LIMIT, Page
from app.core.problems import problem_responses
from app.deps import AdminPrincipal, ContainerDep, SessionDep
from app.webhooks import schemas
from app.webhooks.service import WebhookService

router = APIRouter(prefix="/webhooks", tags=["webhooks"], responses=problem_responses(401, 403, 422))


async def get_service(db: SessionDep, principal: AdminPrincipal, container: ContainerDep) -> WebhookService:
    return WebhookService(db, principal, container.webhook_secrets, container.settings.webhooks.allowed_hosts)


Service = Annotated[WebhookService, Depends(get_service)]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]


@router.post(
    "",
    operation_id="createWebhook",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.WebhookCreated,
)
async def create_webhook(body: schemas.WebhookCreate, service: Service, response: Response) -> schemas.WebhookCreated:
    """Subscribe a URL to event types. The response carries the signing secret; no later read shows it."""
    created = await service.create(body)
    response.headers["Location"] = f"/webhooks/{created.id}"
    return created


@router.get("", operation_id="listWebhooks", response_model=Page[schemas.Webhook])
async def list_webhooks(service: Service, limit: Limit = 50, cursor: str | None = None) -> Page[schemas.Webhook]:
    return await service.page(limit=limit, cursor=cursor)


@router.delete(
    "/{webhook_id}",
    operation_id="deleteWebhook",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404),
)
async def delete_webhook(webhook_id: uuid.UUID, service: Service) -> Response:
    await service.delete(webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{webhook_id}/deliveries",
    operation_id="listWebhookDeliveries",
    response_model=Page[schemas.Delivery],
    responses=problem_responses(404),
)
async def list_deliveries(
    webhook_id: uuid.UUID, service: Service, limit: Limit = 50, cursor: str | None = None
) -> Page[schemas.Delivery]:
    return await service.deliveries_page(webhook_id, limit=limit, cursor=cursor)
