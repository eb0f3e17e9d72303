"""Schedules fire as normal turns: once per tick across replicas, a missed tick once, idempotently."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from app.schedules.worker import ScheduleWorker
from app.settings import Settings
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.turns.support import POLL_TIMEOUT_SECONDS


def _worker(app: FastAPI) -> ScheduleWorker:
    worker: ScheduleWorker = app.state.schedules
    return worker


async def _schedule(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    agent = body.pop("agent", None) or await create_agent(client, headers, scripted_config({"text": "daily report"}))
    response = await client.post(
        "/schedules", json={"agent_id": agent["id"], "cron": "0 9 * * *", "input": "report", **body}, headers=headers
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _firings(client: httpx.AsyncClient, headers: dict[str, str], schedule_id: str) -> list[dict[str, Any]]:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            items = (await client.get(f"/schedules/{schedule_id}/firings", headers=headers)).json()["items"]
            if items and all(f["started"] for f in items):
                return list(items)
            await asyncio.sleep(0.05)


async def _settled(client: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> dict[str, Any]:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            turn = (await client.get(f"/turns/{turn_id}", headers=headers)).json()
            if turn["status"] not in ("queued", "running"):
                return dict(turn)
            await asyncio.sleep(0.05)


def _tick(schedule: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(schedule["next_fire_at"])


async def test_a_due_tick_runs_a_governed_turn_in_a_new_session(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    schedule = await _schedule(client, alice)
    assert await _worker(app).run_once(_tick(schedule) - timedelta(seconds=1)) == []
    await _worker(app).run_once(_tick(schedule) + timedelta(seconds=1))
    [firing] = await _firings(client, alice, schedule["id"])
    assert firing["error"] is None
    turn = await _settled(client, alice, firing["turn_id"])
    assert (turn["status"], turn["final_output"]) == ("completed", "daily report")
    session = (await client.get(f"/sessions/{firing['session_id']}", headers=alice)).json()
    assert session["owner"] == "alice"
    moved = (await client.get(f"/schedules/{schedule['id']}", headers=alice)).json()
    assert _tick(moved) == _tick(schedule) + timedelta(days=1)


async def test_missed_ticks_fire_once_not_once_each(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    schedule = await _schedule(client, alice)
    late = _tick(schedule) + timedelta(days=10, hours=1)
    await _worker(app).run_once(late)
    await _worker(app).run_once(late)
    firings = await _firings(client, alice, schedule["id"])
    assert [datetime.fromisoformat(f["scheduled_for"]) for f in firings] == [_tick(schedule)]
    assert _tick((await client.get(f"/schedules/{schedule['id']}", headers=alice)).json()) > late


async def test_two_replicas_fire_each_tick_exactly_once(settings: Settings, alice: dict[str, str]) -> None:
    async with running_app(settings) as (first, client), running_app(settings) as (second, _):
        schedules = [await _schedule(client, alice) for _ in range(3)]
        now = max(_tick(s) for s in schedules) + timedelta(seconds=1)
        await asyncio.gather(*(_worker(app).run_once(now) for app in (first, second, first, second)))
        for schedule in schedules:
            [firing] = await _firings(client, alice, schedule["id"])
            assert (await _settled(client, alice, firing["turn_id"]))["status"] == "completed"
            turns = (await client.get(f"/sessions/{firing['session_id']}/turns", headers=alice)).json()["items"]
            assert [t["id"] for t in turns] == [firing["turn_id"]]


async def test_a_busy_session_queues_the_firing_behind_its_active_turn(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    config = scripted_config({"text": " ".join(["slow"] * 20)}, {"text": "scheduled"})
    config["model"]["chunk_delay_ms"] = 40
    agent = await create_agent(client, alice, config)
    session = await create_session(client, alice, agent["id"])
    schedule = await _schedule(client, alice, agent=agent, session=session["id"])
    busy = await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "first"}, headers={**alice, "Prefer": "respond-async"}
    )
    await _worker(app).run_once(_tick(schedule) + timedelta(seconds=1))
    [firing] = await _firings(client, alice, schedule["id"])
    assert firing["session_id"] == session["id"]
    assert (await _settled(client, alice, busy.json()["id"]))["status"] == "completed"
    assert (await _settled(client, alice, firing["turn_id"]))["final_output"] == "scheduled"


async def test_a_firing_that_cannot_start_keeps_the_reason(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, scripted_config({"text": "x"}))
    session = await create_session(client, alice, agent["id"])
    schedule = await _schedule(client, alice, agent=agent, session=session["id"])
    await client.delete(f"/sessions/{session['id']}", headers=alice)
    await _worker(app).run_once(_tick(schedule) + timedelta(seconds=1))
    [firing] = await _firings(client, alice, schedule["id"])
    assert "closed" in firing["error"]
    assert (await client.get(f"/turns/{firing['turn_id']}", headers=alice)).status_code == 404


async def test_an_archived_agents_schedule_is_disabled_with_a_reason_and_records_no_firing(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, scripted_config({"text": "x"}))
    schedule = await _schedule(client, alice, agent=agent)
    kept = await _schedule(client, alice)
    await client.delete(f"/agents/{agent['id']}", headers=alice)
    await _worker(app).run_once(_tick(schedule) + timedelta(days=3))
    after = (await client.get(f"/schedules/{schedule['id']}", headers=alice)).json()
    assert (after["enabled"], after["disabled_reason"]) == (False, "its agent was archived")
    assert (await client.get(f"/schedules/{schedule['id']}/firings", headers=alice)).json()["items"] == []
    other = (await client.get(f"/schedules/{kept['id']}", headers=alice)).json()
    assert (other["enabled"], other["disabled_reason"]) == (True, None)
    assert len(await _firings(client, alice, kept["id"])) == 1


async def test_schedules_fire_on_sqlite(tmp_path: Path, alice: dict[str, str]) -> None:
    async with running_app(make_settings(f"sqlite+aiosqlite:///{tmp_path / 'cron.db'}", tmp_path)) as (app, client):
        schedule = await _schedule(client, alice)
        await _worker(app).run_once(_tick(schedule) + timedelta(minutes=5))
        [firing] = await _firings(client, alice, schedule["id"])
        assert (await _settled(client, alice, firing["turn_id"]))["final_output"] == "daily report"
