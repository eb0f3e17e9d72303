"""Idle expiry (`SESSION_IDLE_TTL_SECONDS`) and retention (`RETENTION_DAYS`), on PostgreSQL and SQLite.

Each test runs the real app on either backend, makes a session old by moving its timestamps back
(what an idle hour or a closed month would leave), and runs the app's own sweep once.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.files.store import FileStore
from app.models import Approval, Message, PolicyDecision, Session, Turn, TurnEvent, Usage
from app.models.base import utcnow
from app.sessions.sweeper import SessionSweeper, SweepLimits, session_sweeper
from app.settings import FileSettings, LifecycleSettings
from tests.approvals.helpers import approval_ids, ended, gated_config, open_session, start_turn
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, scripted_config
from tests.sse import read_turn

TTL = 3600
RETENTION_DAYS = 7
LIFECYCLE = LifecycleSettings(session_idle_ttl_seconds=TTL, retention_days=RETENTION_DAYS, session_sweep_seconds=3600)


@pytest.fixture(params=["postgresql", "sqlite"])
async def backend(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'lifecycle.db'}"
    async with running_app(make_settings(url, tmp_path, lifecycle=LIFECYCLE)) as pair:
        yield pair


def _engine(app: FastAPI) -> AsyncEngine:
    engine: AsyncEngine = app.state.container.engine
    return engine


def _sweeper(app: FastAPI, **limits: Any) -> SessionSweeper:
    """The sweep the app runs, as configured (or with smaller batches)."""
    files = FileStore(app.state.container.settings.files.store_dir)
    return session_sweeper(replace(SweepLimits.of(LIFECYCLE), **limits), _engine(app), app.state.container.turns, files)


@contextlib.asynccontextmanager
async def _holding_the_sweep_lock(app: FastAPI) -> AsyncIterator[None]:
    """Hold the sweep lock as a replica's pass does; the app's own first sweep may hold it a moment."""
    holder = _sweeper(app)
    for _ in range(200):
        async with holder._pass() as conn:
            if conn is not None:
                yield
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the sweep lock stayed taken for 10 s")


async def _age_session(app: FastAPI, session_id: str, **columns: Any) -> None:
    async with _engine(app).begin() as conn:
        await conn.execute(update(Session).where(Session.id == uuid.UUID(session_id)).values(**columns))


async def _age_turns(app: FastAPI, session_id: str, seconds: int) -> None:
    async with _engine(app).begin() as conn:
        await conn.execute(
            update(Turn)
            .where(Turn.session_id == uuid.UUID(session_id))
            .values(updated_at=utcnow() - timedelta(seconds=seconds))
        )


async def _count(app: FastAPI, column: Any, where: Any) -> int:
    async with _engine(app).connect() as conn:
        return int(await conn.scalar(select(func.count(column)).where(where)) or 0)


async def test_an_idle_session_expires_and_refuses_turns(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = backend
    agent = await create_agent(client, alice, scripted_config({"text": "hi"}))
    idle = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
    fresh = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
    await read_turn(client, "POST", f"/sessions/{idle['id']}/turns", json={"input": "hello"}, headers=alice)
    await _age_session(app, idle["id"], last_active_at=utcnow() - timedelta(seconds=TTL + 60))
    await _age_turns(app, idle["id"], TTL + 60)

    report = await _sweeper(app).sweep()

    assert report.expired >= 1
    expired = (await client.get(f"/sessions/{idle['id']}", headers=alice)).json()
    assert expired["status"] == "expired"
    assert expired["closed_at"] is not None
    assert (await client.get(f"/sessions/{fresh['id']}", headers=alice)).json()["status"] == "open"
    refused = await client.post(f"/sessions/{idle['id']}/turns", json={"input": "again"}, headers=alice)
    assert refused.status_code == 409
    assert refused.json()["code"] == "session_expired"
    messages = (await client.get(f"/sessions/{idle['id']}/messages", headers=alice)).json()["items"]
    assert [m["content"] for m in messages] == ["hello", "hi"]


async def test_a_session_idle_past_its_ttl_is_expired_before_any_sweep(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    """The TTL is a promise: read, listed, found by its external_id or sent a turn, the session is expired
    the moment its TTL has passed; the sweep then stores what readers already saw."""
    app, client = backend
    agent = await create_agent(client, alice, scripted_config({"text": "hi"}))
    body = {"agent_id": agent["id"], "external_id": "idle-thread"}
    idle = (await client.post("/sessions", json=body, headers=alice)).json()
    fresh = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
    await read_turn(client, "POST", f"/sessions/{idle['id']}/turns", json={"input": "hello"}, headers=alice)
    active_at = utcnow() - timedelta(seconds=TTL + 60)
    await _age_session(app, idle["id"], last_active_at=active_at)
    await _age_turns(app, idle["id"], TTL + 60)
    turns_before = await _count(app, Turn.id, Turn.session_id == uuid.UUID(idle["id"]))

    read = (await client.get(f"/sessions/{idle['id']}", headers=alice)).json()
    listed = {s["id"]: s for s in (await client.get("/sessions", headers=alice)).json()["items"]}
    found = await client.post("/sessions", json=body, headers=alice)
    refused = await client.post(f"/sessions/{idle['id']}/turns", json={"input": "again"}, headers=alice)

    assert read["status"] == "expired"
    assert read["closed_at"] is not None
    assert read["closed_at"] < utcnow().isoformat()
    assert listed[idle["id"]] == read
    assert listed[fresh["id"]]["status"] == "open"
    assert found.status_code == 200
    assert found.json() == read
    assert refused.status_code == 409
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "session_expired"
    assert await _count(app, Turn.id, Turn.session_id == uuid.UUID(idle["id"])) == turns_before
    messages = (await client.get(f"/sessions/{idle['id']}/messages", headers=alice)).json()["items"]
    assert [m["content"] for m in messages] == ["hello", "hi"]
    stored_open = (Session.id == uuid.UUID(idle["id"])) & (Session.status == "open")
    assert await _count(app, Session.id, stored_open) == 1, "no sweep ran: the row itself is still open"

    assert (await _sweeper(app).sweep()).expired >= 1
    assert (await client.get(f"/sessions/{idle['id']}", headers=alice)).json() == read


async def test_a_decision_on_a_turn_whose_session_idled_past_its_ttl_is_refused_before_any_sweep(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = backend
    session = await open_session(client, alice, gated_config())
    frames = await start_turn(client, alice, session)
    (approval_id,) = approval_ids(frames)
    turn_id = frames[0].data["turn_id"]
    await _age_session(app, session["id"], last_active_at=utcnow() - timedelta(seconds=TTL + 60))
    await _age_turns(app, session["id"], TTL + 60)

    decided = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice)

    assert decided.status_code == 409
    assert decided.headers["content-type"] == "application/problem+json"
    assert decided.json()["code"] == "session_expired"
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "pending"
    assert (await client.get(f"/turns/{turn_id}", headers=alice)).json()["status"] == "interrupted"


async def test_a_turn_counts_as_activity(backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]) -> None:
    """A session started a while ago (within its TTL) is kept by a turn from a sweep whose TTL it had passed."""
    app, client = backend
    agent = await create_agent(client, alice, scripted_config({"text": "hi"}))
    session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
    await _age_session(app, session["id"], last_active_at=utcnow() - timedelta(seconds=TTL - 60))
    await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hello"}, headers=alice)
    after_turn = (await client.get(f"/sessions/{session['id']}", headers=alice)).json()
    assert after_turn["last_active_at"] > session["last_active_at"]

    await _sweeper(app, idle_ttl_seconds=TTL - 120).sweep()
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["status"] == "open"


async def test_a_session_whose_turn_ended_recently_is_not_idle(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    """A long turn (or one resumed by a late decision) ends long after it started: still activity."""
    app, client = backend
    agent = await create_agent(client, alice, scripted_config({"text": "hi"}))
    session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
    await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hello"}, headers=alice)
    await _age_session(app, session["id"], last_active_at=utcnow() - timedelta(seconds=TTL + 60))

    await _sweeper(app).sweep()

    kept = (await client.get(f"/sessions/{session['id']}", headers=alice)).json()
    assert kept["status"] == "open"
    assert kept["last_active_at"] > (utcnow() - timedelta(seconds=TTL)).isoformat()


async def test_expiry_cancels_the_interrupted_turn_and_expires_its_approvals(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = backend
    session = await open_session(client, alice, gated_config())
    frames = await start_turn(client, alice, session)
    assert ended(frames)["status"] == "interrupted"
    (approval_id,) = approval_ids(frames)
    turn_id = frames[0].data["turn_id"]
    await _age_session(app, session["id"], last_active_at=utcnow() - timedelta(seconds=TTL + 60))
    await _age_turns(app, session["id"], TTL + 60)

    report = await _sweeper(app).sweep()

    assert report.turns_ended == 1
    approval = (await client.get(f"/approvals/{approval_id}", headers=alice)).json()
    assert approval["status"] == "expired"
    assert "session expired" in approval["decision_reason"]
    turn = (await client.get(f"/turns/{turn_id}", headers=alice)).json()
    assert turn["status"] == "cancelled"
    assert turn["error"]["code"] == "session_expired"
    after = {**alice, "Last-Event-ID": str(frames[-1].id)}
    replay = await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=after)
    assert [f.event for f in replay] == ["turn.ended"]
    assert replay[0].data["status"] == "cancelled"
    assert replay[0].data["error"]["code"] == "session_expired"
    decided = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice)
    assert decided.status_code == 409
    pending = (Approval.turn_id == uuid.UUID(turn_id)) & (Approval.status == "pending")
    assert await _count(app, Approval.id, pending) == 0


async def test_retention_deletes_events_and_messages_of_old_ended_sessions_in_batches(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = backend
    config = scripted_config({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"text": "done"})
    agent = await create_agent(client, alice, config)
    old, recent, still_open = [
        (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json() for _ in range(3)
    ]
    for session in (old, recent, still_open):
        for text in ("one", "two"):
            await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": text}, headers=alice)
    for session in (old, recent):
        assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
    await _age_session(app, old["id"], closed_at=utcnow() - timedelta(days=RETENTION_DAYS, hours=1))
    await _age_session(app, still_open["id"], last_active_at=utcnow())
    old_id = uuid.UUID(old["id"])
    old_turns = select(Turn.id).where(Turn.session_id == old_id).scalar_subquery()
    usage_before = await _count(app, Usage.id, Usage.session_id == old_id)
    receipts_before = await _count(app, PolicyDecision.id, PolicyDecision.session_id == old_id)
    assert await _count(app, TurnEvent.seq, TurnEvent.turn_id.in_(old_turns)) > 3

    report = await _sweeper(app, purge_rows=3).sweep()

    assert report.purged >= 1
    assert await _count(app, TurnEvent.seq, TurnEvent.turn_id.in_(old_turns)) == 0
    assert await _count(app, Message.id, Message.session_id == old_id) == 0
    assert await _count(app, Usage.id, Usage.session_id == old_id) == usage_before > 0
    assert await _count(app, PolicyDecision.id, PolicyDecision.session_id == old_id) == receipts_before
    assert (await client.get(f"/sessions/{old['id']}/messages", headers=alice)).json()["items"] == []
    for kept in (recent, still_open):
        assert len((await client.get(f"/sessions/{kept['id']}/messages", headers=alice)).json()["items"]) == 8
    again = await _sweeper(app).sweep()
    assert again.rows_deleted == 0


async def test_concurrent_first_sends_get_one_session_on_either_backend(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = backend
    agent = await create_agent(client, alice)
    body = {"agent_id": agent["id"], "external_id": "first-send"}
    responses = await asyncio.gather(*(client.post("/sessions", json=body, headers=alice) for _ in range(8)))
    assert sorted(r.status_code for r in responses) == [200] * 7 + [201]
    assert len({r.json()["id"] for r in responses}) == 1
    assert await _count(app, Session.id, Session.agent_id == uuid.UUID(agent["id"])) == 1


async def test_one_replica_sweeps_at_a_time(database_url: str, tmp_path: Path, alice: dict[str, str]) -> None:
    """PostgreSQL: while one pass holds the advisory lock, another replica's sweep does nothing."""
    async with running_app(make_settings(database_url, tmp_path, lifecycle=LIFECYCLE)) as (app, client):
        agent = await create_agent(client, alice)
        session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
        await _age_session(app, session["id"], last_active_at=utcnow() - timedelta(seconds=TTL + 60))
        async with _holding_the_sweep_lock(app):
            blocked = await _sweeper(app).sweep()
        assert blocked.expired == 0
        stored_open = (Session.id == uuid.UUID(session["id"])) & (Session.status == "open")
        assert await _count(app, Session.id, stored_open) == 1
        assert (await _sweeper(app).sweep()).expired >= 1
        assert await _count(app, Session.id, stored_open) == 0
        assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["status"] == "expired"


async def test_retention_deletes_the_files_a_purged_session_used_and_keeps_the_others(
    backend: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = backend
    agent = await create_agent(client, alice, scripted_config({"text": "seen"}))
    old, kept = [(await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json() for _ in "ab"]
    used, other, unused = [
        (await client.post("/files", files={"file": (f"{n}.txt", b"text")}, headers=alice)).json() for n in "xyz"
    ]
    for session, file in ((old, used), (kept, other)):
        parts = [{"type": "text", "text": "read"}, {"type": "file", "file_id": file["id"]}]
        await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": parts}, headers=alice)
        assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
    await _age_session(app, old["id"], closed_at=utcnow() - timedelta(days=RETENTION_DAYS, hours=1))

    await _sweeper(app).sweep()

    assert (await client.get(f"/files/{used['id']}", headers=alice)).status_code == 404
    for file in (other, unused):
        assert (await client.get(f"/files/{file['id']}", headers=alice)).status_code == 200


async def test_retention_removes_a_purged_sessions_file_bytes_from_the_file_store(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    """With FILE_STORE_DIR the bytes live on disk: purging the session that used a file removes them too."""
    store = tmp_path / "files"
    settings = make_settings(database_url, tmp_path, lifecycle=LIFECYCLE, files=FileSettings(store_dir=store))
    async with running_app(settings) as (app, client):
        agent = await create_agent(client, alice, scripted_config({"text": "seen"}))
        session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=alice)).json()
        used, unused = [
            (await client.post("/files", files={"file": (f"{n}.txt", b"text")}, headers=alice)).json() for n in "xy"
        ]
        assert sorted(p.name for p in store.iterdir()) == sorted([used["id"], unused["id"]])
        parts = [{"type": "text", "text": "read"}, {"type": "file", "file_id": used["id"]}]
        await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": parts}, headers=alice)
        assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
        await _age_session(app, session["id"], closed_at=utcnow() - timedelta(days=RETENTION_DAYS, hours=1))

        await _sweeper(app).sweep()

        assert (await client.get(f"/files/{used['id']}", headers=alice)).status_code == 404
        assert [p.name for p in store.iterdir()] == [unused["id"]]
