from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import Table, delete, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import Sql, insert_rows
from app.models import Agent, Runner, Session
from app.runtime.port.journal import TurnIdentity
from app.runtime.store.turns import TURNS
from app.runtime.stream import BatchFlusher
from app.settings import Settings
from tests.turns.loopback import serve_on_loopback
from tests.turns.support import now

AGENTS: Table = Agent.__table__  # type: ignore[assignment]
SESSIONS: Table = Session.__table__  # type: ignore[assignment]
RUNNERS: Table = Runner.__table__  # type: ignore[assignment]


NEVER = 3600.0
"""A batching interval no test reaches: only explicit flushes, ends and `write_pending` write."""


@pytest.fixture
async def flusher(db: Sql) -> AsyncIterator[BatchFlusher]:
    created = BatchFlusher(db, interval=NEVER)
    try:
        yield created
    finally:
        await created.close()


@pytest.fixture(scope="module")
async def live_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A real HTTP client against the service under uvicorn on loopback (true streaming)."""
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client


@pytest.fixture
async def make_turn(engine: AsyncEngine, db: Sql) -> AsyncIterator[Callable[[], Awaitable[TurnIdentity]]]:
    """`running` turns of fresh tenants, leased to a runner whose heartbeat is in the future.

    (So the lease sweep of an app running on the shared PostgreSQL database never fails them.)
    """
    made: list[tuple[uuid.UUID, uuid.UUID]] = []

    async def make() -> TurnIdentity:
        tenant = f"writer-{uuid.uuid4().hex[:10]}"
        agent_id, session_id, turn_id, runner_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        await insert_rows(db, AGENTS, [{
            "id": agent_id, "tenant_id": tenant, "created_at": now(), "name": "writer", "description": None,
            "current_version": 1, "created_by": "alice", "updated_at": now(), "archived_at": None,
        }])  # fmt: skip
        await insert_rows(db, SESSIONS, [{
            "id": session_id, "tenant_id": tenant, "created_at": now(), "agent_id": agent_id, "agent_version": 1,
            "owner_sub": "alice", "snapshot": {"model": {"provider": "scripted"}}, "metadata": {}, "status": "open",
            "updated_at": now(), "closed_at": None,
        }])  # fmt: skip
        await insert_rows(
            db, RUNNERS, [{"id": runner_id, "started_at": now(), "heartbeat_at": now() + timedelta(days=1)}]
        )
        await insert_rows(db, TURNS, [{
            "id": turn_id, "tenant_id": tenant, "created_at": now(), "session_id": session_id, "status": "running",
            "input": "go", "final_output": None, "error": None, "input_tokens": 0, "output_tokens": 0,
            "loop_count": 0, "max_loops": 8, "max_output_tokens": 1000, "last_seq": 0, "owner_sub": "alice",
            "resumed_by": None, "runner_id": runner_id, "updated_at": now(), "ended_at": None,
        }])  # fmt: skip
        made.append((turn_id, runner_id))
        return TurnIdentity(tenant_id=tenant, session_id=session_id, turn_id=turn_id, agent_id=agent_id)

    try:
        yield make
    finally:
        async with engine.begin() as conn:
            for turn_id, runner_id in made:
                await conn.execute(
                    update(TURNS).where(TURNS.c.id == turn_id, TURNS.c.status == "running").values(status="cancelled")
                )
                await conn.execute(delete(RUNNERS).where(RUNNERS.c.id == runner_id))
