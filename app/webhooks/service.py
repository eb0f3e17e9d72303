"""Webhook subscriptions (role admin): create with a secret shown once, list, delete, delivery log."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.core.outbound import OutboundBlocked, check_outbound_url
from app.core.pagination import Page, page_of
from app.core.sealing import SecretSealer
from app.errors import InvalidInput, NotFound
from app.models.webhook import Webhook
from app.webhooks import schemas
from app.webhooks.repository import DeliveryRepository, WebhookRepository
from app.webhooks.signing import InvalidSecret, new_secret, secret_key


def secret_binding(tenant_id: str, webhook_id: uuid.UUID) -> bytes:
    """A sealed secret only opens for the row it was made for (a ciphertext copied elsewhere does not)."""
    return f"webhook:{tenant_id}:{webhook_id}".encode()


class WebhookService:
    def __init__(
        self, db: AsyncSession, principal: Principal, sealer: SecretSealer, allowed_hosts: Sequence[str]
    ) -> None:
        self.principal = principal
        self.sealer = sealer
        self.allowed_hosts = allowed_hosts
        self.webhooks = WebhookRepository(db, principal.tenant_id)
        self.deliveries = DeliveryRepository(db, principal.tenant_id)

    async def create(self, body: schemas.WebhookCreate) -> schemas.WebhookCreated:
        try:
            await check_outbound_url(body.url, self.allowed_hosts)
        except OutboundBlocked as exc:
            raise InvalidInput(str(exc), field="body.url") from exc
        secret = body.secret or new_secret()
        try:
            secret_key(secret)
        except InvalidSecret as exc:
            raise InvalidInput(str(exc), field="body.secret") from exc
        webhook_id = uuid.uuid4()
        sealed = self.sealer.seal(secret, secret_binding(self.principal.tenant_id, webhook_id))
        row = Webhook(
            id=webhook_id,
            tenant_id=self.principal.tenant_id,
            url=body.url,
            events=list(dict.fromkeys(body.events)),
            secret_key_id=sealed.key_id,
            secret_sealed=sealed.blob,
            created_by=self.principal.sub,
        )
        await self.webhooks.add(row)
        return schemas.WebhookCreated(**schemas.Webhook.model_validate(row).model_dump(), secret=secret)

    async def page(self, *, limit: int, cursor: str | None) -> Page[schemas.Webhook]:
        rows, next_cursor = page_of(await self.webhooks.page(limit=limit, cursor=cursor), limit)
        return Page(items=[schemas.Webhook.model_validate(r) for r in rows], next_cursor=next_cursor)

    async def delete(self, webhook_id: uuid.UUID) -> None:
        if not await self.webhooks.delete(webhook_id):
            raise NotFound(f"Webhook {webhook_id} not found")

    async def deliveries_page(self, webhook_id: uuid.UUID, *, limit: int, cursor: str | None) -> Page[schemas.Delivery]:
        if await self.webhooks.get(webhook_id) is None:
            raise NotFound(f"Webhook {webhook_id} not found")
        rows, next_cursor = page_of(await self.deliveries.page(webhook_id, limit=limit, cursor=cursor), limit)
        return Page(items=[schemas.Delivery.model_validate(r) for r in rows], next_cursor=next_cursor)
