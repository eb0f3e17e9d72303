"""Start-up recovery: a turn left `running` by a dead process is failed, and its followers do not hang."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
from sqlalchemy import insert, select

from app.core.db import create_engine
from app.models import Turn, TurnEvent
from app.models.base import utcnow
from app.runtime.stream import SEQ_BLOCK
from tests.conftest import make_settings, running_app
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session


async def _orphan(database_url: str, tenant: str, session: dict[str, object]) -> uuid.UUID:
    """A turn as a crashed process leaves it: `running`, two events stored, no task anywhere."""
    turn_id = uuid.uuid4()
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                insert(Turn).values(
                    id=turn_id, tenant_id=tenant, session_id=uuid.UUID(str(session["id"])), status="running",
                    input="hi", max_loops=8, max_output_tokens=100, owner_sub="alice", last_seq=0,
                    seq_ceiling=SEQ_BLOCK, created_at=utcnow(), updated_at=utcnow(),
                )
            )
            for seq, kind in [(1, "turn.started"), (2, "node.started")]:
                data = f'{{"turn_id":"{turn_id}","seq":{seq},"type":"{kind}"}}'
                await conn.execute(
                    insert(TurnEvent).values(
                        turn_id=turn_id, seq=seq, tenant_id=tenant, type=kind, data=data, created_at=utcnow()
                    )
                )
    finally:
        await engine.dispose()
    return turn_id


async def test_restart_fails_an_orphaned_running_turn_with_server_restarted(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice)
    turn_id = await _orphan(database_url, tenant, session)
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        turn = (await fresh.get(f"/turns/{turn_id}", headers=alice)).json()
        assert turn["status"] == "failed"
        assert turn["error"]["code"] == "server_restarted"
        assert turn["ended_at"] is not None
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(fresh, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert [f.id for f in frames[:2]] == [1, 2]
    ended = frames[-1]
    assert ended.id == SEQ_BLOCK + 1, "a dead run may have shown ids up to its ceiling: they are skipped"
    assert ended.event == "turn.ended"
    assert ended.data["status"] == "failed"
    assert ended.data["error"]["code"] == "server_restarted"
    assert turn["last_seq"] == ended.id


async def test_recovered_session_accepts_a_new_turn(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice, {"text": "back again"})
    await _orphan(database_url, tenant, session)
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        frames = await read_turn(
            fresh, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice
        )
    assert frames[-1].data["status"] == "completed"
    assert frames[-1].data["final_output"] == "back again"


async def test_recovery_leaves_finished_turns_alone(
    client: httpx.AsyncClient, alice: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice, {"text": "done"})
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
    turn_id = uuid.UUID(frames[0].data["turn_id"])
    async with running_app(make_settings(database_url, tmp_path)):
        pass
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            status = await conn.scalar(select(Turn.status).where(Turn.id == turn_id))
            count = await conn.scalar(select(TurnEvent.seq).where(TurnEvent.turn_id == turn_id).order_by(
                TurnEvent.seq.desc()).limit(1))
    finally:
        await engine.dispose()
    assert status == "completed"
    assert count == len(frames)


async def test_follower_ahead_of_the_stored_events_still_gets_the_recovered_end(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    # The dead run may have streamed events 3..50 it never stored; the follower saw them, not the table.
    session = await scripted_session(client, alice)
    turn_id = await _orphan(database_url, tenant, session)
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(
                fresh, "GET", f"/turns/{turn_id}/events", headers={**alice, "Last-Event-ID": "50"}
            )
    assert [f.event for f in frames] == ["turn.ended"]
    assert frames[0].id > 50
    assert frames[0].data["error"]["code"] == "server_restarted"
