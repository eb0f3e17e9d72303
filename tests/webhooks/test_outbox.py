"""The outbox half of a turn's write, on both backends, through `write_rows` (the writer's only write)."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from sqlalchemy import Table, event, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import INTEGRITY_ERRORS, Sql
from app.models import A2aPushConfig, Agent, Session, Turn, TurnEvent, Webhook, WebhookDelivery
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


async def _task(engine: AsyncEngine, tenant: str) -> uuid.UUID:
    """A turn (an A2A task) with its agent and session: push configs name their task."""
    agent_id, session_id, turn_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with engine.begin() as conn:
        await conn.execute(insert(Agent).values(id=agent_id, tenant_id=tenant, name="a", created_by="alice"))
        await conn.execute(
            insert(Session).values(
                id=session_id, tenant_id=tenant, agent_id=agent_id, agent_version=1, owner_sub="alice", snapshot={}
            )
        )
        await conn.execute(
            insert(Turn).values(
                id=turn_id,
                tenant_id=tenant,
                session_id=session_id,
                status="running",
                input="hi",
                max_loops=8,
                max_output_tokens=100,
                owner_sub="alice",
                last_seq=0,
                created_at=utcnow(),
                updated_at=utcnow(),
            )  # fmt: skip
        )
    return turn_id


async def _push_config(engine: AsyncEngine, tenant: str, turn_id: uuid.UUID) -> uuid.UUID:
    config_id = uuid.uuid4()
    async with engine.begin() as conn:
        await conn.execute(
            insert(A2aPushConfig).values(
                id=config_id,
                tenant_id=tenant,
                turn_id=turn_id,
                config_id=str(turn_id),
                url="https://hooks.example.com/a2a",
                created_by="alice",
            )  # fmt: skip
        )
    return config_id


async def test_a_turn_ended_gets_a_delivery_per_push_config_of_its_task_in_the_same_write(
    engine: AsyncEngine, db: Sql
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    turn_id, other_turn = await _task(engine, tenant), await _task(engine, tenant)
    config = await _push_config(engine, tenant, turn_id)
    await _push_config(engine, tenant, other_turn)
    hook = await _subscribe(engine, tenant, "turn.ended")
    types = ["turn.started", "approval.required", "turn.ended"]
    await write_rows(db, [_event(tenant, turn_id, seq, t) for seq, t in enumerate(types, start=1)])
    stored = await _deliveries(engine, turn_id)
    targets = sorted((d["seq"], str(d["webhook_id"]), str(d["push_config_id"])) for d in stored)
    assert targets == sorted([(3, str(hook), "None"), (3, "None", str(config))])
    assert await _deliveries(engine, other_turn) == []


async def test_push_configs_cost_a_write_no_statement(engine: AsyncEngine, db: Sql) -> None:
    """PostgreSQL: the write is one statement with or without them (its CTEs); SQLite: the same count."""
    if engine.dialect.name != "sqlite":
        pytest.skip("on PostgreSQL a write is one statement by construction (app/runtime/store/batch.py)")
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    await _subscribe(engine, tenant, "turn.ended")
    plain, pushed = await _task(engine, tenant), await _task(engine, tenant)
    await _push_config(engine, tenant, pushed)
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        await write_rows(db, [_event(tenant, plain, 1, "message.delta"), _event(tenant, plain, 2, "turn.ended")])
        without = len(statements)
        statements.clear()
        await write_rows(db, [_event(tenant, pushed, 1, "message.delta"), _event(tenant, pushed, 2, "turn.ended")])
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)
    assert len(statements) == without
    assert len(await _deliveries(engine, pushed)) == 2
