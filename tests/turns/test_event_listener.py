"""A write of events NOTIFYs (in the write's own statement) and wakes listeners in other processes."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from app.models.base import utcnow
from app.runtime.store.notify import EventListener
from app.runtime.stream import EVENTS, BatchFlusher, TurnWriter
from tests.factories import create_agent, create_session
from tests.sse import read_turn


async def test_a_written_event_notifies_a_listener_of_its_turn(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    frames = await read_turn(client, "POST", url, json={"input": "hi"}, headers=alice)
    turn_id = uuid.UUID(frames[0].data["turn_id"])
    listener = EventListener(make_url(database_url))
    await listener.start()
    try:
        woke = asyncio.create_task(listener.wait(turn_id, timeout=10))
        unrelated = asyncio.create_task(listener.wait(uuid.uuid4(), timeout=0.5))
        await asyncio.sleep(0.1)
        row = {
            "turn_id": turn_id,
            "seq": frames[-1].id + 1,
            "tenant_id": tenant,
            "type": "node.started",
            "data": "{}",
            "created_at": utcnow(),
        }
        writer = TurnWriter(app.state.container.sql)
        writer.stage(EVENTS, row)
        await writer.close()
        assert await woke is True
        assert await unrelated is False
    finally:
        await listener.close()


async def test_a_shared_flush_notifies_the_listeners_of_every_turn_it_wrote(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str
) -> None:
    agent = await create_agent(client, alice)
    ended: list[tuple[uuid.UUID, int]] = []
    for _ in range(2):
        session = await create_session(client, alice, agent["id"])
        frames = await read_turn(
            client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice
        )
        ended.append((uuid.UUID(frames[0].data["turn_id"]), frames[-1].id))
    listener = EventListener(make_url(database_url))
    await listener.start()
    flusher = BatchFlusher(app.state.container.sql, interval=3600)
    try:
        woke = [asyncio.create_task(listener.wait(turn_id, timeout=10)) for turn_id, _ in ended]
        await asyncio.sleep(0.1)
        writers = []
        for turn_id, last_seq in ended:
            writer = TurnWriter(app.state.container.sql, flusher)
            writer.stage(
                EVENTS,
                {
                    "turn_id": turn_id,
                    "seq": last_seq + 1,
                    "tenant_id": tenant,
                    "type": "node.started",
                    "data": "{}",
                    "created_at": utcnow(),
                },
            )
            writers.append(writer)
        await flusher.write_pending()
        assert [await task for task in woke] == [True, True]
        assert [w._rows for w in writers] == [[], []]
    finally:
        await flusher.close()
        await listener.close()
