"""SQLite (one process, no advisory locks): a restart continues the turns its previous process left
running — handed over by a clean stop, or abandoned by a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.conftest import make_settings, running_app
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session, wait_for_status

WORDS = " ".join(f"w{i}" for i in range(30))
ASYNC = {"Prefer": "respond-async"}


async def _started_in_background(client: httpx.AsyncClient, alice: dict[str, str]) -> str:
    """A slow turn (30 words, 50 ms apart) started in the background; its id once it streams."""
    session = await slow_session(client, alice, text=WORDS, delay_ms=50)
    started = await client.post(f"/sessions/{session['id']}/turns", json={"input": "talk"}, headers={**alice, **ASYNC})
    assert started.status_code == 202, started.text
    return str(started.json()["id"])


async def test_a_clean_stop_hands_the_running_turn_over_to_the_next_start(
    alice: dict[str, str], tmp_path: Path
) -> None:
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}", tmp_path)
    async with running_app(settings) as (_, client):
        turn_id = await _started_in_background(client, alice)
        await wait_for_status(client, alice, turn_id, {"running"})
    async with running_app(settings) as (_, client):
        turn = await wait_for_status(client, alice, turn_id)
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "shutdown"
    assert frames[frames.index(resumed) - 1].id == resumed.data["last_durable_seq"], "the hand-over stored all"
    assert [f.event for f in frames].count("turn.ended") == 1


async def test_a_crashed_process_leaves_its_running_turn_to_the_next_start(
    alice: dict[str, str], tmp_path: Path
) -> None:
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}", tmp_path)
    async with running_app(settings) as (app, client):
        turn_id = await _started_in_background(client, alice)
        await wait_for_status(client, alice, turn_id, {"running"})
        manager = app.state.container.turns
        await manager.abandon()  # the process vanishes: nothing more written, no hand-over
        await manager.lease.stop(deregister=False)
    async with running_app(settings) as (_, client):
        turn = await wait_for_status(client, alice, turn_id)
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "replica_lost"
    assert [f.event for f in frames].count("turn.ended") == 1
    assert [f.data["text"] for f in frames if f.event == "message.completed"] == [WORDS]
