from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models.a2a_push_config import A2aPushConfig
from app.models.turn import Turn
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


DELIVERIES: Table = WebhookDelivery.__table__  # type: ignore[assignment]
WEBHOOKS: Table = Webhook.__table__  # type: ignore[assignment]
PUSH_CONFIGS: Table = A2aPushConfig.__table__  # type: ignore[assignment]
TURNS: Table = Turn.__table__  # type: ignore[assignment]


class Outbox:
    """The delivery worker's statements across tenants (Core, on a connection of its own): it claims
    due deliveries, reads their webhooks (or A2A push configs) and settles each delivery by the id it claimed."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def claim(self, now: datetime, *, lease: timedelta, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` due deliveries in one statement, hidden from other replicas for `lease` and
        their attempt counted; on PostgreSQL rows another replica is claiming are skipped."""
        due = (
            select(DELIVERIES.c.id)
            .where(DELIVERIES.c.status == "pending", DELIVERIES.c.next_attempt_at <= now)
            .order_by(DELIVERIES.c.next_attempt_at)
            .limit(limit)
        )
        if self.conn.dialect.name == "postgresql":
            due = due.with_for_update(skip_locked=True)
        claim = (
            update(DELIVERIES)
            .where(DELIVERIES.c.id.in_(due.scalar_subquery()))
            .values(next_attempt_at=now + lease, attempts=DELIVERIES.c.attempts + 1, last_attempt_at=now)
            .returning(
                DELIVERIES.c.id,
                DELIVERIES.c.tenant_id,
                DELIVERIES.c.webhook_id,
                DELIVERIES.c.push_config_id,
                DELIVERIES.c.payload,
                DELIVERIES.c.attempts,
                DELIVERIES.c.created_at,
                DELIVERIES.c.last_error,
            )
        )
        return [dict(row) for row in (await self.conn.execute(claim)).mappings()]

    async def webhooks(self, ids: set[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
        """The claimed deliveries' webhooks by id (the caller checks each one's tenant against its delivery)."""
        stmt = select(
            WEBHOOKS.c.id, WEBHOOKS.c.tenant_id, WEBHOOKS.c.url, WEBHOOKS.c.secret_key_id, WEBHOOKS.c.secret_sealed
        ).where(WEBHOOKS.c.id.in_(ids))
        return {row["id"]: dict(row) for row in (await self.conn.execute(stmt)).mappings()}

    async def push_configs(self, ids: set[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
        """The claimed deliveries' A2A push configs by id, with the owner of their task (whose view of
        the task they are sent); the caller checks each one's tenant against its delivery."""
        configs, turns = PUSH_CONFIGS, TURNS
        stmt = (
            select(
                configs.c.id,
                configs.c.tenant_id,
                configs.c.turn_id,
                configs.c.url,
                configs.c.auth_schemes,
                configs.c.secret_key_id,
                configs.c.secret_sealed,
                turns.c.owner_sub,
            )
            .join(turns, turns.c.id == configs.c.turn_id)
            .where(configs.c.id.in_(ids))
        )
        return {row["id"]: dict(row) for row in (await self.conn.execute(stmt)).mappings()}

    async def settle(self, delivery_id: uuid.UUID, values: Mapping[str, Any]) -> None:
        await self.conn.execute(update(DELIVERIES).where(DELIVERIES.c.id == delivery_id).values(dict(values)))
