"""Replicas continue only the turns of processes that died: the runner heartbeat is the lease (and on
PostgreSQL the runner's advisory lock, tests/runtime/test_continuation.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from fastapi import FastAPI
from sqlalchemy import insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import Query, asyncpg_dsn
from app.models import Runner, Turn
from app.models.base import utcnow
from app.runtime.lease import orphaned_turns
from tests.conftest import make_settings, running_app
from tests.turns.support import scripted_session, wait_for_status


async def _running_turn(sql: AsyncEngine, tenant: str, session: dict[str, Any], runner_id: uuid.UUID) -> uuid.UUID:
    turn_id = uuid.uuid4()
    async with sql.begin() as conn:
        await conn.execute(
            insert(Turn).values(
                id=turn_id,
                tenant_id=tenant,
                session_id=uuid.UUID(session["id"]),
                status="running",
                input="hi",
                max_loops=8,
                max_output_tokens=100,
                owner_sub="alice",
                last_seq=0,
                runner_id=runner_id,
                created_at=utcnow(),
                updated_at=utcnow(),
            )
        )
    return turn_id


async def _runner(sql: AsyncEngine, *, heartbeat_age_seconds: float) -> uuid.UUID:
    runner_id = uuid.uuid4()
    beat = utcnow() - timedelta(seconds=heartbeat_age_seconds)
    async with sql.begin() as conn:
        await conn.execute(insert(Runner).values(id=runner_id, started_at=beat, heartbeat_at=beat))
    return runner_id


async def test_a_new_replica_leaves_the_turns_of_a_live_replica_alone(
    client: httpx.AsyncClient,
    alice: dict[str, str],
    tenant: str,
    sql: AsyncEngine,
    database_url: str,
    tmp_path: Path,
) -> None:
    session = await scripted_session(client, alice)
    turn_id = await _running_turn(sql, tenant, session, await _runner(sql, heartbeat_age_seconds=1))
    async with running_app(make_settings(database_url, tmp_path)), sql.connect() as conn:
        assert await conn.scalar(select(Turn.status).where(Turn.id == turn_id)) == "running"
    async with sql.begin() as conn:
        await conn.execute(update(Turn).where(Turn.id == turn_id).values(status="cancelled"))


async def test_a_sweep_continues_the_turns_of_a_replica_whose_heartbeat_lapsed(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, sql: AsyncEngine, app: FastAPI
) -> None:
    session = await scripted_session(client, alice, {"text": "carried on"})
    turn_id = await _running_turn(sql, tenant, session, await _runner(sql, heartbeat_age_seconds=3600))
    await app.state.container.turns.recover()  # (the app's own sweep may have been first)
    turn = await wait_for_status(client, alice, str(turn_id))
    assert (turn["status"], turn["final_output"]) == ("completed", "carried on")


async def test_the_service_registers_its_runner_and_beats(app: FastAPI, sql: AsyncEngine) -> None:
    manager = app.state.container.turns
    await manager.lease.heartbeat()
    async with sql.connect() as conn:
        beat = await conn.scalar(select(Runner.heartbeat_at).where(Runner.id == manager.runner_id))
    assert beat is not None
    assert utcnow() - beat < timedelta(minutes=1)


async def test_the_sweep_finds_running_turns_through_their_partial_index(database_url: str) -> None:
    """Every replica sweeps every 2 s: the query must be able to read only the running turns' index."""
    query = Query(orphaned_turns(uuid.uuid4(), postgresql=True))
    conn = await asyncpg.connect(asyncpg_dsn(make_url(database_url)))
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL enable_seqscan = off")  # a small test table would be scanned anyway
            plan = "\n".join(row[0] for row in await conn.fetch("EXPLAIN " + query.sql, *query.args({})))
    finally:
        await conn.close()
    assert "ix_turns_running_runner" in plan, plan
