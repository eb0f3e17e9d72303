"""The outbox half of a turn's write: a delivery row for every stored event a subscription names.

On PostgreSQL this is one more data-modifying CTE of the turn's write statement (app/runtime/store/batch.py):
the events' INSERT returns what it stored, and `INSERT INTO webhook_deliveries … SELECT` joins it with
the tenant's webhooks whose `events` contain the event's type; a second one joins each `turn.ended`
with the A2A push notification configs of its task (app/interop/a2a_server/push.py), an index probe
of the same statement. So an event and its deliveries are stored by the same statement, or neither
is. SQLite writes them in the write's transaction, reading both kinds of subscription in one query.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Table, Uuid, and_, bindparam, cast, func, literal, null, select, union_all
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import CTE

from app.core.sql import Query, Sql, bare, insert_rows
from app.models.a2a_push_config import PUSHED_EVENT, A2aPushConfig
from app.models.base import utcnow
from app.models.webhook import Webhook
from app.models.webhook_delivery import WebhookDelivery

WEBHOOKS: Table = Webhook.__table__  # type: ignore[assignment]
DELIVERIES: Table = WebhookDelivery.__table__  # type: ignore[assignment]
PUSH_CONFIGS: Table = A2aPushConfig.__table__  # type: ignore[assignment]
OUTBOX_EVENT_COLUMNS = ("tenant_id", "turn_id", "seq", "type", "data")
"""What the events' INSERT must return for `outbox_inserts`."""
_DELIVERY_COLUMNS = [
    "id", "tenant_id", "turn_id", "seq", "event_type", "payload", "status", "attempts", "next_attempt_at",
    "created_at",
]  # fmt: skip


def _delivery_rows(events: CTE, target: Any) -> list[Any]:
    """A pending delivery's columns (as `_DELIVERY_COLUMNS`, then the target's id) for each joined row."""
    return [
        func.gen_random_uuid(),
        events.c.tenant_id,
        events.c.turn_id,
        events.c.seq,
        events.c.type,
        events.c.data,
        literal("pending"),
        literal(0),
        func.now(),
        func.now(),
        target,
    ]


def outbox_inserts(events: CTE) -> list[Insert]:
    """PostgreSQL: the deliveries of the rows `events` (an INSERT … RETURNING OUTBOX_EVENT_COLUMNS)
    stored, to webhooks and to A2A push notification configs."""
    hooks, pushes, deliveries = bare(WEBHOOKS), bare(PUSH_CONFIGS), bare(DELIVERIES)
    subscribed = and_(hooks.c.tenant_id == events.c.tenant_id, cast(hooks.c.events, JSONB).op("?")(events.c.type))
    pushed = and_(
        pushes.c.turn_id == events.c.turn_id, pushes.c.tenant_id == events.c.tenant_id, events.c.type == PUSHED_EVENT
    )
    to_hooks = select(*_delivery_rows(events, hooks.c.id)).select_from(events.join(hooks, subscribed))
    to_pushes = select(*_delivery_rows(events, pushes.c.id)).select_from(events.join(pushes, pushed))
    return [
        deliveries.insert().from_select([*_DELIVERY_COLUMNS, "webhook_id"], to_hooks),
        deliveries.insert().from_select([*_DELIVERY_COLUMNS, "push_config_id"], to_pushes),
    ]


@lru_cache(maxsize=16)
def subscriptions_query(tenants: int, turns: int = 0) -> Query:
    """The webhooks of `tenants` tenants (bound as t0, t1, …) and the push configs of `turns` turns
    (bound as u0, u1, …; their `events` are NULL): one statement however many kinds there are."""
    wanted = WEBHOOKS.c.tenant_id.in_([bindparam(f"t{i}") for i in range(tenants)])
    hooks = select(
        WEBHOOKS.c.id.label("webhook_id"),
        cast(null(), Uuid()).label("push_config_id"),
        WEBHOOKS.c.tenant_id,
        WEBHOOKS.c.events,
        cast(null(), Uuid()).label("turn_id"),
    ).where(wanted)
    if not turns:
        return Query(hooks)
    pushed = PUSH_CONFIGS.c.turn_id.in_([bindparam(f"u{i}", type_=Uuid()) for i in range(turns)])
    pushes = select(
        cast(null(), Uuid()),
        PUSH_CONFIGS.c.id,
        PUSH_CONFIGS.c.tenant_id,
        cast(null(), WEBHOOKS.c.events.type),
        PUSH_CONFIGS.c.turn_id,
    ).where(pushed)
    return Query(union_all(hooks, pushes))


def _subscribed(event: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    if target["tenant_id"] != event["tenant_id"]:
        return False
    if target["push_config_id"] is not None:
        return bool(event["type"] == PUSHED_EVENT and target["turn_id"] == event["turn_id"])
    return event["type"] in (target["events"] or [])


async def enqueue_in_transaction(tx: Sql, events: Sequence[Mapping[str, Any]]) -> None:
    """Any backend, inside the write's transaction: the deliveries of `events` (rows of turn_events)."""
    tenants = sorted({str(event["tenant_id"]) for event in events})
    if not tenants:
        return
    turns = sorted({event["turn_id"] for event in events if event["type"] == PUSHED_EVENT})
    params: dict[str, Any] = {f"t{i}": t for i, t in enumerate(tenants)}
    params.update({f"u{i}": t for i, t in enumerate(turns)})
    targets = await tx.fetch(subscriptions_query(len(tenants), len(turns)), params)
    if not targets:
        return
    now = utcnow()
    rows = [
        {
            "id": uuid.uuid4(),
            "tenant_id": event["tenant_id"],
            "webhook_id": target["webhook_id"],
            "push_config_id": target["push_config_id"],
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
        for target in targets
        if _subscribed(event, target)
    ]
    if rows:
        await insert_rows(tx, DELIVERIES, rows)
