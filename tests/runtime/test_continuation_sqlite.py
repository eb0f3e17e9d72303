"""SQLite (one process, no advisory locks): a restart continues the turns its previous process left
running — handed over by a clean stop, or abandoned by a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from tests.conftest import make_settings, running_app
from tests.sse import Frame, read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session, wait_for_status

WORDS = " ".join(f"w{i}" for i in range(30))
ASYNC = {"Prefer": "respond-async"}


async def _continued_after_restart(
    tmp_path: Path, alice: dict[str, str], stop: Callable[[FastAPI], Awaitable[None]]
) -> tuple[dict[str, Any], list[Frame]]:
    """A slow turn (30 words, 50 ms apart) started in the background on one process of a SQLite file,
    `stop` once it runs (the process then shuts down cleanly), and the next process's start: the turn
    as that process finished it, and its stored stream."""
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}", tmp_path)
    async with running_app(settings) as (app, client):
        session = await slow_session(client, alice, text=WORDS, delay_ms=50)
        body = {"input": "talk"}
        started = await client.post(f"/sessions/{session['id']}/turns", json=body, headers={**alice, **ASYNC})
        assert started.status_code == 202, started.text
        turn_id = str(started.json()["id"])
        await wait_for_status(client, alice, turn_id, {"running"})
        await stop(app)
    async with running_app(settings) as (_, client):
        turn = await wait_for_status(client, alice, turn_id)
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            return turn, await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=alice)


async def _nothing(_: FastAPI) -> None:
    """A clean stop only: the shutdown hands the running turn over."""


async def _vanish(app: FastAPI) -> None:
    """The process vanishes as if killed: nothing more written, no hand-over."""
    manager = app.state.container.turns
    await manager.abandon()
    await manager.lease.stop(deregister=False)


async def test_a_clean_stop_hands_the_running_turn_over_to_the_next_start(
    alice: dict[str, str], tmp_path: Path
) -> None:
    turn, frames = await _continued_after_restart(tmp_path, alice, _nothing)

    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "shutdown"
    assert frames[frames.index(resumed) - 1].id == resumed.data["last_durable_seq"], "the hand-over stored all"
    assert [f.event for f in frames].count("turn.ended") == 1


async def test_a_crashed_process_leaves_its_running_turn_to_the_next_start(
    alice: dict[str, str], tmp_path: Path
) -> None:
    turn, frames = await _continued_after_restart(tmp_path, alice, _vanish)

    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "replica_lost"
    assert [f.event for f in frames].count("turn.ended") == 1
    assert [f.data["text"] for f in frames if f.event == "message.completed"] == [WORDS]
