"""Deleting a dataset while an eval runs on it, on PostgreSQL: the delete and the runner's result
inserts lock the run row first, so neither deadlocks the other (the API once answered 500); the run
goes with its dataset and its turns are cancelled; the runner's inserts for it stop.

The deadlock it was: the delete's cascade locks the dataset's items, then its runs; an insert into
eval_results checks its run's key, then its item's."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.evals.repository import EvalStore
from app.models import Dataset, DatasetItem, EvalResult, EvalRun, Session, Turn
from app.settings import EvalSettings
from tests.conftest import TokenFactory, make_settings, running_app
from tests.factories import create_agent, scripted_config
from tests.turns.support import LONG_TEXT

DEADLINE = 60.0
ROUNDS = 4
ITEMS = 500
SHORT_TEXT = " ".join(["word"] * 8)
"""With chunk_delay_ms 20 a turn streams for a fraction of a second: items keep ending and the runner
keeps inserting result rows, the writes a dataset's delete used to deadlock with."""


@pytest.fixture(scope="module")
async def evals_app(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    folder: Path = tmp_path_factory.mktemp("dataset_delete")
    settings = make_settings(database_url, folder, evals=EvalSettings(poll_seconds=0.2))
    async with running_app(settings) as pair:
        yield pair


@pytest.fixture
def evals_client(evals_app: tuple[FastAPI, httpx.AsyncClient]) -> httpx.AsyncClient:
    return evals_app[1]


async def _slow_agent(client: httpx.AsyncClient, headers: dict[str, str], text: str) -> dict[str, Any]:
    config = scripted_config({"text": text})
    config["model"]["chunk_delay_ms"] = 20
    return await create_agent(client, headers, config)


async def _run(
    client: httpx.AsyncClient, headers: dict[str, str], agent_id: str, *, items: int, concurrency: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    body = {"name": f"set-{uuid.uuid4().hex[:8]}", "items": [{"input": f"q{i}"} for i in range(items)]}
    dataset = (await client.post("/datasets", json=body, headers=headers)).json()
    started = await client.post(
        "/evals",
        json={"dataset_id": dataset["id"], "agent_id": agent_id, "agent_version": 1, "concurrency": concurrency},
        headers=headers,
    )
    assert started.status_code == 202, started.text
    return dataset, started.json()


async def _until_items(client: httpx.AsyncClient, headers: dict[str, str], eval_id: str) -> None:
    """Until the runner has made result rows (its turns are under way)."""
    deadline = time.monotonic() + DEADLINE
    while not (await client.get(f"/evals/{eval_id}/items", headers=headers)).json()["items"]:
        assert time.monotonic() < deadline, "the run started no item"
        await asyncio.sleep(0.05)


async def _eval_turns(sql: AsyncEngine, agent_id: str) -> list[str]:
    stmt = (
        select(Turn.status)
        .join(Session, Session.id == Turn.session_id)
        .where(Session.agent_id == uuid.UUID(agent_id), Session.purpose == "eval")
    )
    async with sql.connect() as conn:
        return list((await conn.execute(stmt)).scalars().all())


async def _until_a_turn_runs(sql: AsyncEngine, agent_id: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while "running" not in await _eval_turns(sql, agent_id):
        assert time.monotonic() < deadline, "no eval turn ran"
        await asyncio.sleep(0.05)


async def _settled_turns(sql: AsyncEngine, agent_id: str) -> list[str]:
    """The statuses of the agent's eval turns once none runs any more (bounded)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        statuses = await _eval_turns(sql, agent_id)
        if not {"running", "queued"} & set(statuses):
            return statuses
        assert time.monotonic() < deadline, f"eval turns still running: {statuses}"
        await asyncio.sleep(0.1)


async def _results(sql: AsyncEngine, eval_id: uuid.UUID) -> int:
    async with sql.connect() as conn:
        stmt = select(func.count()).select_from(EvalResult).where(EvalResult.eval_id == eval_id)
        return int((await conn.execute(stmt)).scalar_one())


async def _delete_waits_on_a_lock(sql: AsyncEngine) -> None:
    stmt = text(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM datasets%'"
    )
    deadline = time.monotonic() + DEADLINE
    while True:
        async with sql.connect() as conn:
            if (await conn.execute(stmt)).scalar_one():
                return
        assert time.monotonic() < deadline, "the delete never reached the held item"
        await asyncio.sleep(0.02)


async def _a_slow_run_under_way(
    evals_app: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> tuple[EvalStore, dict[str, Any], EvalRun]:
    """The worker's store, and a three-item run of a slow agent whose first item has started."""
    app, client = evals_app
    store: EvalStore = app.state.evals.store
    agent = await _slow_agent(client, alice, LONG_TEXT)
    dataset, started = await _run(client, alice, agent["id"], items=3, concurrency=1)
    await _until_items(client, alice, started["id"])
    run = await store.run(uuid.UUID(started["id"]))
    assert run is not None
    return store, dataset, run


async def test_a_result_insert_while_the_delete_cascades_waits_for_it_instead_of_deadlocking(
    evals_app: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str], sql: AsyncEngine
) -> None:
    """The interleaving made certain: the run is on its first item; a lock on the last item holds
    the delete's cascade there, past the second item, when the runner makes the second item's result."""
    client = evals_app[1]
    store, dataset, run = await _a_slow_run_under_way(evals_app, alice)
    first, second, last = await store.items(run.tenant_id, run.dataset_id)
    async with sql.connect() as holder:
        await holder.begin()
        await holder.execute(
            select(DatasetItem.id).where(DatasetItem.id == last.id).with_for_update(key_share=True, read=True)
        )
        deleting = asyncio.create_task(client.delete(f"/datasets/{dataset['id']}", headers=alice))
        await _delete_waits_on_a_lock(sql)
        inserting = asyncio.create_task(store.result_for(run, second, 1))
        await asyncio.sleep(0.2)
        await holder.rollback()
        async with asyncio.timeout(DEADLINE):
            deleted, result = await asyncio.gather(deleting, inserting)
    assert deleted.status_code == 204, deleted.text
    assert result is None
    assert await _results(sql, run.id) == 0
    assert (await client.get(f"/evals/{run.id}", headers=alice)).status_code == 404


async def test_deleting_a_dataset_mid_run_is_204_and_cancels_the_run_without_a_deadlock(
    evals_client: httpx.AsyncClient, alice: dict[str, str], sql: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """Repeated, as a deadlock needs the delete to meet an insert: each round deletes the dataset
    while sixteen items at a time end and start, each start inserting its result row; the cascade
    through hundreds of items gives the inserts a window."""
    client = evals_client
    caplog.set_level(logging.WARNING, logger="app.evals")
    for _ in range(ROUNDS):
        agent = await _slow_agent(client, alice, SHORT_TEXT)
        dataset, run = await _run(client, alice, agent["id"], items=ITEMS, concurrency=16)
        await _until_items(client, alice, run["id"])
        deleted = await client.delete(f"/datasets/{dataset['id']}", headers=alice)
        assert deleted.status_code == 204, deleted.text
        assert (await client.get(f"/evals/{run['id']}", headers=alice)).status_code == 404
        assert (await client.get(f"/datasets/{dataset['id']}", headers=alice)).status_code == 404
        statuses = await _settled_turns(sql, agent["id"])
        assert set(statuses) <= {"cancelled", "completed"}, statuses
        assert await _results(sql, uuid.UUID(run["id"])) == 0
    assert [r.getMessage() for r in caplog.records if r.name.startswith("app.evals")] == []


async def test_a_turn_still_running_when_its_dataset_goes_is_cancelled(
    evals_client: httpx.AsyncClient, alice: dict[str, str], sql: AsyncEngine
) -> None:
    client = evals_client
    agent = await _slow_agent(client, alice, LONG_TEXT)
    dataset, _ = await _run(client, alice, agent["id"], items=3, concurrency=1)
    await _until_a_turn_runs(sql, agent["id"])
    assert (await client.delete(f"/datasets/{dataset['id']}", headers=alice)).status_code == 204
    assert await _settled_turns(sql, agent["id"]) == ["cancelled"]


@pytest.mark.parametrize("ending", ["cancel", "delete"])
async def test_the_runners_result_for_a_run_no_longer_running_is_none_and_inserts_nothing(
    evals_app: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str], sql: AsyncEngine, ending: str
) -> None:
    client = evals_app[1]
    store, dataset, run = await _a_slow_run_under_way(evals_app, alice)
    last = (await store.items(run.tenant_id, run.dataset_id))[-1]
    before = await _results(sql, run.id)
    if ending == "cancel":
        assert (await client.post(f"/evals/{run.id}/cancel", headers=alice)).status_code == 200
    else:
        assert (await client.delete(f"/datasets/{dataset['id']}", headers=alice)).status_code == 204
        before = 0
    assert await store.result_for(run, last, 1) is None
    assert await _results(sql, run.id) == before


async def test_another_tenants_dataset_is_404_before_any_lock(
    evals_client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory, sql: AsyncEngine
) -> None:
    """The dataset and its run are locked meanwhile: a delete that took any of their locks would wait."""
    client = evals_client
    agent = await _slow_agent(client, alice, LONG_TEXT)
    dataset, run = await _run(client, alice, agent["id"], items=2, concurrency=1)
    stranger = auth_headers("another-tenant", "alice", roles=["admin"])
    async with sql.connect() as conn, conn.begin():
        await conn.execute(select(Dataset.id).where(Dataset.id == uuid.UUID(dataset["id"])).with_for_update())
        await conn.execute(select(EvalRun.id).where(EvalRun.id == uuid.UUID(run["id"])).with_for_update())
        async with asyncio.timeout(10):
            response = await client.delete(f"/datasets/{dataset['id']}", headers=stranger)
        assert response.status_code == 404, response.text
    assert (await client.get(f"/datasets/{dataset['id']}", headers=alice)).status_code == 200
    assert (await client.post(f"/evals/{run['id']}/cancel", headers=alice)).status_code == 200
