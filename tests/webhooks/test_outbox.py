"""The outbox half of a turn's write, on both backends, through `write_rows` (the writer's only write)."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from sqlalchemy import Table, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import INTEGRITY_ERRORS, Sql
from app.models import TurnEvent, Webhook, WebhookDelivery
from app.models.base import utcnow
from app.runtime.store.batch import EVENTS, StagedRow, write_rows

WEBHOOKS: Table = Webhook.__table__  # type: ignore[assignment]
DELIVERIES: Table = WebhookDelivery.__table__  # type: ignore[assignment]
EVENT_ROWS: Table = TurnEvent.__table__  # type: ignore[assignment]


async def _subscribe(engine: AsyncEngine, tenant: str, *events: str) -> uuid.UUID:
    hook_id = uuid.uuid4()
    row = {
        "id": hook_id,
        "tenant_id": tenant,
        "url": "https://hooks.example.com/x",
        "events": list(events),
        "secret_key_id": "k",
        "secret_sealed": b"sealed",
        "created_by": "root",
        "created_at": utcnow(),
    }
    async with engine.begin() as conn:
        await conn.execute(insert(WEBHOOKS).values(row))
    return hook_id


def _event(tenant: str, turn_id: uuid.UUID, seq: int, event_type: str) -> StagedRow:
    data = orjson.dumps({"turn_id": str(turn_id), "seq": seq, "type": event_type}).decode()
    row: dict[str, Any] = {
        "tenant_id": tenant,
        "turn_id": turn_id,
        "seq": seq,
        "type": event_type,
        "data": data,
        "created_at": utcnow(),
    }
    return EVENTS, row


async def _deliveries(engine: AsyncEngine, turn_id: uuid.UUID) -> list[dict[str, Any]]:
    query = select(DELIVERIES).where(DELIVERIES.c.turn_id == turn_id).order_by(DELIVERIES.c.seq)
    async with engine.connect() as conn:
        return [dict(r) for r in (await conn.execute(query)).mappings()]


async def test_subscribed_events_of_the_tenant_get_a_delivery_in_the_same_write(engine: AsyncEngine, db: Sql) -> None:
    tenant, other = f"t-{uuid.uuid4().hex[:8]}", f"o-{uuid.uuid4().hex[:8]}"
    ended_hook = await _subscribe(engine, tenant, "turn.ended", "approval.required")
    delta_hook = await _subscribe(engine, tenant, "message.delta")
    await _subscribe(engine, other, "turn.ended", "message.delta")
    turn_id = uuid.uuid4()
    types = ["turn.started", "message.delta", "approval.required", "turn.ended"]
    rows = [_event(tenant, turn_id, seq, t) for seq, t in enumerate(types, start=1)]
    await write_rows(db, rows)
    stored = await _deliveries(engine, turn_id)
    assert [(d["seq"], d["event_type"], d["webhook_id"]) for d in stored] == [
        (2, "message.delta", delta_hook),
        (3, "approval.required", ended_hook),
        (4, "turn.ended", ended_hook),
    ]
    by_seq = {seq: row["data"] for seq, (_, row) in enumerate(rows, start=1)}
    for delivery in stored:
        assert delivery["payload"] == by_seq[delivery["seq"]]
        assert delivery["tenant_id"] == tenant  # (status and attempts belong to whichever worker finds it)


async def test_a_failed_write_stores_neither_the_events_nor_their_deliveries(engine: AsyncEngine, db: Sql) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    await _subscribe(engine, tenant, "turn.ended", "usage")
    turn_id = uuid.uuid4()
    await write_rows(db, [_event(tenant, turn_id, 1, "usage")])
    duplicate = [_event(tenant, turn_id, 2, "turn.ended"), _event(tenant, turn_id, 1, "usage")]
    with pytest.raises(INTEGRITY_ERRORS):
        await write_rows(db, duplicate)
    assert [d["seq"] for d in await _deliveries(engine, turn_id)] == [1]
    async with engine.connect() as conn:
        count = await conn.scalar(select(func.count()).where(EVENT_ROWS.c.turn_id == turn_id))
    assert count == 1
