from __future__ import annotations

import uuid

from sqlalchemy import delete

from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models.webhook import Webhook
from app.models.webhook_delivery import WebhookDelivery


class WebhookRepository(TenantRepository[Webhook]):
    model = Webhook

    async def get(self, webhook_id: uuid.UUID) -> Webhook | None:
        return await self.first(self.readable().where(Webhook.id == webhook_id))

    async def page(self, *, limit: int, cursor: str | None) -> list[Webhook]:
        stmt = paginate(self.readable(), created_at=Webhook.created_at, row_id=Webhook.id, limit=limit, cursor=cursor)
        return await self.all(stmt)

    async def delete(self, webhook_id: uuid.UUID) -> bool:
        stmt = delete(Webhook).where(Webhook.tenant_id == self.tenant_id, Webhook.id == webhook_id)
        result = await self.session.execute(stmt)
        return bool(result.rowcount)  # type: ignore[attr-defined]


class DeliveryRepository(TenantRepository[WebhookDelivery]):
    model = WebhookDelivery

    async def page(self, webhook_id: uuid.UUID, *, limit: int, cursor: str | None) -> list[WebhookDelivery]:
        stmt = self.readable().where(WebhookDelivery.webhook_id == webhook_id)
        stmt = paginate(
            stmt, created_at=WebhookDelivery.created_at, row_id=WebhookDelivery.id, limit=limit, cursor=cursor
        )
        return await self.all(stmt)
