"""Replicas recover only the turns of processes that died: the runner heartbeat is the lease."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert, select, update

from app.core.db import create_engine
from app.models import Runner, Turn
from app.models.base import utcnow
from tests.conftest import make_settings, running_app
from tests.turns.support import scripted_session


async def _running_turn(database_url: str, tenant: str, session: dict, runner_id: uuid.UUID | None) -> uuid.UUID:
    engine = create_engine(database_url)
    turn_id = uuid.uuid4()
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(Turn).values(
                id=turn_id, tenant_id=tenant, session_id=uuid.UUID(session["id"]), status="running", input="hi",
                max_loops=8, max_output_tokens=100, owner_sub="alice", last_seq=0, runner_id=runner_id,
                created_at=utcnow(), updated_at=utcnow(),
            ))
    finally:
        await engine.dispose()
    return turn_id


async def _register(database_url: str, *, heartbeat_age_seconds: float) -> uuid.UUID:
    engine = create_engine(database_url)
    runner_id = uuid.uuid4()
    beat = utcnow() - timedelta(seconds=heartbeat_age_seconds)
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(Runner).values(id=runner_id, started_at=beat, heartbeat_at=beat))
    finally:
        await engine.dispose()
    return runner_id


async def _status(database_url: str, turn_id: uuid.UUID) -> str:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            return str(await conn.scalar(select(Turn.status).where(Turn.id == turn_id)))
    finally:
        await engine.dispose()


async def test_a_new_replica_leaves_the_turns_of_a_live_replica_alone(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice)
    live_runner = await _register(database_url, heartbeat_age_seconds=1)
    turn_id = await _running_turn(database_url, tenant, session, live_runner)
    async with running_app(make_settings(database_url, tmp_path)):
        assert await _status(database_url, turn_id) == "running"
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(update(Turn).where(Turn.id == turn_id).values(status="cancelled"))
    finally:
        await engine.dispose()


async def test_a_sweep_ends_the_turns_of_a_replica_whose_heartbeat_lapsed(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, app: object
) -> None:
    session = await scripted_session(client, alice)
    dead_runner = await _register(database_url, heartbeat_age_seconds=3600)
    turn_id = await _running_turn(database_url, tenant, session, dead_runner)
    ended = await app.state.container.turns.recover()  # type: ignore[attr-defined]
    assert ended >= 1
    turn = (await client.get(f"/turns/{turn_id}", headers=alice)).json()
    assert turn["status"] == "failed"
    assert turn["error"]["code"] == "server_restarted"


async def test_the_service_registers_its_runner_and_beats(app: object, database_url: str) -> None:
    manager = app.state.container.turns  # type: ignore[attr-defined]
    await manager.lease.heartbeat()
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            beat = await conn.scalar(select(Runner.heartbeat_at).where(Runner.id == manager.runner_id))
    finally:
        await engine.dispose()
    assert beat is not None
    assert utcnow() - beat < timedelta(minutes=1)
