"""A turn left `running` by a process that died is continued by a live one (here: a restart), from
what is stored; one that cannot continue fails `server_restarted`. Followers never hang, ids are never
reused."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert, select, update

from app.core.db import create_engine
from app.models import Message, Session, Turn, TurnEvent, Usage
from app.models.base import utcnow
from app.runtime.store.status import SEQ_BLOCK
from tests.conftest import make_settings, running_app
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session, wait_for_status


async def _orphan(database_url: str, tenant: str, session: dict[str, Any], *, answer: str | None = None) -> uuid.UUID:
    """A turn as a crashed process leaves it: `running`, its user message and two events stored, no
    runner; with `answer`, the model's final reply (and its usage) was stored too."""
    turn_id, session_id = uuid.uuid4(), uuid.UUID(str(session["id"]))
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                insert(Turn).values(
                    id=turn_id, tenant_id=tenant, session_id=session_id, status="running",
                    input="hi", max_loops=8, max_output_tokens=100, owner_sub="alice", last_seq=0,
                    seq_ceiling=SEQ_BLOCK, created_at=utcnow(), updated_at=utcnow(),
                )
            )  # fmt: skip
            messages = [("user", "hi")] + ([("assistant", answer)] if answer is not None else [])
            for role, content in messages:
                await conn.execute(insert(Message).values(
                    tenant_id=tenant, session_id=session_id, turn_id=turn_id, role=role, content=content,
                    is_error=False, created_at=utcnow(),
                ))  # fmt: skip
            if answer is not None:
                await conn.execute(insert(Usage).values(
                    id=uuid.uuid4(), tenant_id=tenant, session_id=session_id, turn_id=turn_id,
                    agent_id=uuid.UUID(str(session["agent_id"])), model="scripted", input_tokens=5, output_tokens=7,
                    kind="model", created_at=utcnow(),
                ))  # fmt: skip
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


async def test_a_restart_continues_an_orphaned_running_turn(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice, {"text": "back again"})
    turn_id = await _orphan(database_url, tenant, session)
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        turn = await wait_for_status(fresh, alice, str(turn_id))
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(fresh, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert (turn["status"], turn["final_output"]) == ("completed", "back again")
    assert [f.id for f in frames[:2]] == [1, 2]
    resumed = frames[2]
    assert resumed.event == "turn.resumed"
    assert resumed.id == SEQ_BLOCK + 1, "the dead run may have shown ids up to its ceiling: they are skipped"
    assert resumed.data == {"turn_id": str(turn_id), "seq": SEQ_BLOCK + 1, "type": "turn.resumed",
                            "reason": "replica_lost", "from_loop": 0, "last_durable_seq": 2}  # fmt: skip
    assert [f.id for f in frames[2:]] == list(range(SEQ_BLOCK + 1, SEQ_BLOCK + 1 + len(frames) - 2))
    assert [f.event for f in frames].count("turn.ended") == 1
    assert turn["last_seq"] == frames[-1].id


async def test_a_stored_final_answer_closes_the_turn_without_calling_the_model_again(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice, {"text": "a second answer nobody asked for"})
    turn_id = await _orphan(database_url, tenant, session, answer="the stored answer")
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        turn = await wait_for_status(fresh, alice, str(turn_id))
        messages = (await fresh.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert (turn["status"], turn["final_output"]) == ("completed", "the stored answer")
    assert (turn["usage"]["input_tokens"], turn["usage"]["output_tokens"]) == (5, 7), "from the stored usage rows"
    assert turn["loop_count"] == 1
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["the stored answer"]


async def test_a_turn_whose_provider_is_gone_fails_with_server_restarted(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice)
    turn_id = await _orphan(database_url, tenant, session)
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                update(Session)
                .where(Session.id == uuid.UUID(str(session["id"])))
                .values(snapshot={"model": {"provider": "retired-provider"}})
            )
    finally:
        await engine.dispose()
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        turn = await wait_for_status(fresh, alice, str(turn_id))
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(fresh, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert (turn["status"], turn["error"]["code"]) == ("failed", "server_restarted")
    ended = frames[-1]
    assert ended.event == "turn.ended"
    assert ended.id > SEQ_BLOCK, "after every id the dead run may have shown"
    assert turn["last_seq"] == ended.id


async def test_recovered_session_accepts_a_new_turn(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    session = await scripted_session(client, alice, {"text": "continued"}, {"text": "back again"})
    turn_id = await _orphan(database_url, tenant, session)
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        await wait_for_status(fresh, alice, str(turn_id))
        frames = await read_turn(fresh, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
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
            count = await conn.scalar(
                select(TurnEvent.seq).where(TurnEvent.turn_id == turn_id).order_by(TurnEvent.seq.desc()).limit(1)
            )
    finally:
        await engine.dispose()
    assert status == "completed"
    assert count == len(frames)


async def test_a_follower_ahead_of_the_stored_events_learns_which_it_saw_did_not_survive(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, database_url: str, tmp_path: Path
) -> None:
    # The dead run may have streamed events 3..50 it never stored; the follower saw them, not the table.
    session = await scripted_session(client, alice)
    turn_id = await _orphan(database_url, tenant, session)
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(fresh, "GET", f"/turns/{turn_id}/events", headers={**alice, "Last-Event-ID": "50"})
    assert frames[0].event == "turn.resumed"
    assert frames[0].id > 50
    assert frames[0].data["last_durable_seq"] == 2, "the client drops its events 3..50"
    assert frames[-1].data["status"] == "completed"
