"""A push config saved while a write that ends its task is under way still hears that end.

The write below stands for a turn's last write whose statement began before the config committed
(so it could not join the config): it holds the turn's row, settles the turn and stores its
`turn.ended`, and commits only after the config was saved. The catch-up must wait for it and
deliver its event (PostgreSQL: SQLite serialises writers, so no write is under way beside another).
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
from a2a.types import PushNotificationConfig
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.auth.principal import Principal
from app.interop.a2a_server.push import PushConfigs
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session, wait_for_status

ENDED = '{"status": "completed"}'
ASYNC = {"Prefer": "respond-async"}


async def test_a_config_saved_during_the_ending_write_gets_that_end_once_it_commits(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str, sql: AsyncEngine
) -> None:
    session = await scripted_session(client, alice, {"text": "done"})
    started = await client.post(f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=ASYNC | alice)
    assert started.status_code == 202, started.text
    turn_id = uuid.UUID(started.json()["id"])
    assert (await wait_for_status(client, alice, str(turn_id)))["status"] == "completed"
    ids = {"t": turn_id}
    async with sql.begin() as conn:  # a resumed run is under way: the task is no longer at rest
        await conn.execute(text("UPDATE turns SET status = 'running' WHERE id = :t"), ids)
        last = (await conn.execute(text("SELECT max(seq) FROM turn_events WHERE turn_id = :t"), ids)).scalar_one()
    pushes = PushConfigs(app.state.container, Principal("alice", tenant))
    config = PushNotificationConfig(url="https://hooks.example.com/a2a")

    async with sql.connect() as writer:
        write = await writer.begin()
        await writer.execute(text("SELECT id FROM turns WHERE id = :t FOR SHARE"), ids)
        await writer.execute(text("UPDATE turns SET status = 'completed' WHERE id = :t"), ids)
        await writer.execute(
            text(
                "INSERT INTO turn_events (tenant_id, turn_id, seq, type, data, created_at)"
                " VALUES (:tenant, :t, :seq, 'turn.ended', :data, now())"
            ),
            {"tenant": tenant, "t": turn_id, "seq": last + 1, "data": ENDED},
        )
        saving = asyncio.create_task(pushes.save(turn_id, config))
        await asyncio.sleep(0.5)
        assert not saving.done(), "the catch-up waits for the write that holds the turn"
        await write.commit()
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        await saving

    async with sql.connect() as conn:
        delivered = (
            await conn.execute(
                text("SELECT seq, payload FROM webhook_deliveries WHERE turn_id = :t AND push_config_id IS NOT NULL"),
                ids,
            )
        ).all()
    assert [(row.seq, row.payload) for row in delivered] == [(last + 1, ENDED)]
