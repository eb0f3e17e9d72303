"""The outbox half of a turn's write: a delivery row for every stored event a subscription names.

On PostgreSQL this is one more data-modifying CTE of the turn's write statement (app/runtime/store/batch.py):
the events' INSERT returns what it stored, and `INSERT INTO webhook_deliveries … SELECT` joins it with
the tenant's webhooks whose `events` contain the event's type. So an event and its deliveries are
stored by the same statement, or neither is. SQLite writes them in the write's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Table, and_, bindparam, cast, func, literal, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import CTE

from app.core.sql import Query, Sql, bare, insert_rows
from app.models.base import utcnow
from app.models.webhook import Webhook
from app.models.webhook_delivery import WebhookDelivery

WEBHOOKS: Table = Webhook.__table__  # type: ignore[assignment]
DELIVERIES: Table = WebhookDelivery.__table__  # type: ignore[assignment]
OUTBOX_EVENT_COLUMNS = ("tenant_id", "turn_id", "seq", "type", "data")
"""What the events' INSERT must return for `outbox_insert`."""
_DELIVERY_COLUMNS = [
    "id", "tenant_id", "webhook_id", "turn_id", "seq", "event_type", "payload", "status", "attempts",
    "next_attempt_at", "created_at",
]  # fmt: skip


def outbox_insert(events: CTE) -> Insert:
    """PostgreSQL: deliveries for the rows `events` (an INSERT … RETURNING EVENT_COLUMNS) stored."""
    hooks, deliveries = bare(WEBHOOKS), bare(DELIVERIES)
    subscribed = and_(hooks.c.tenant_id == events.c.tenant_id, cast(hooks.c.events, JSONB).op("?")(events.c.type))
    rows = select(
        func.gen_random_uuid(),
        events.c.tenant_id,
        hooks.c.id,
        events.c.turn_id,
        events.c.seq,
        events.c.type,
        events.c.data,
        literal("pending"),
        literal(0),
        func.now(),
        func.now(),
    ).select_from(events.join(hooks, subscribed))
    return deliveries.insert().from_select(_DELIVERY_COLUMNS, rows)


@lru_cache(maxsize=16)
def subscriptions_query(tenants: int) -> Query:
    """The webhooks of `tenants` tenants (bound as t0, t1, …)."""
    wanted = WEBHOOKS.c.tenant_id.in_([bindparam(f"t{i}") for i in range(tenants)])
    return Query(select(WEBHOOKS.c.id, WEBHOOKS.c.tenant_id, WEBHOOKS.c.events).where(wanted))


async def enqueue_in_transaction(tx: Sql, events: Sequence[Mapping[str, Any]]) -> None:
    """Any backend, inside the write's transaction: the deliveries of `events` (rows of turn_events)."""
    tenants = sorted({str(event["tenant_id"]) for event in events})
    if not tenants:
        return
    hooks = await tx.fetch(subscriptions_query(len(tenants)), {f"t{i}": t for i, t in enumerate(tenants)})
    if not hooks:
        return
    now = utcnow()
    rows = [
        {
            "id": uuid.uuid4(),
            "tenant_id": event["tenant_id"],
            "webhook_id": hook["id"],
            "turn_id": event["turn_id"],
            "seq": event["seq"],
            "event_type": event["type"],
            "payload": event["data"],
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        }
        for event in events
        for hook in hooks
        if hook["tenant_id"] == event["tenant_id"] and event["type"] in (hook["events"] or [])
    ]
    if rows:
        await insert_rows(tx, DELIVERIES, rows)
