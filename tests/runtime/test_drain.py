"""SIGTERM drains a replica: unready, new turns refused with `Retry-After`, running turns finish, and the
process keeps answering follow and replay requests until they have (the real CLI in a process)."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Turn
from app.settings import Settings
from tests.conftest import TEST_SECRET, TokenFactory, make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.live_server import live_server
from tests.sse import iter_frames
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session, wait_for_status

STREAM_TIMEOUT_SECONDS = 60.0
WORDS = " ".join(f"word{i}" for i in range(60))
"""At 50 ms a word: a turn that is still streaming when the SIGTERM arrives, well inside the grace."""


async def test_sigterm_lets_the_running_turn_finish_while_refusing_new_ones(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory, sql: AsyncEngine
) -> None:
    alice = auth_headers(tenant, "alice")
    env = {"SHUTDOWN_GRACE_SECONDS": "40"}
    with live_server(database_url, TEST_SECRET, tmp_path, env_overrides=env) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            running = await slow_session(client, alice, text=WORDS, delay_ms=50)
            waiting = await create_session(client, alice, (await create_agent(client, alice, scripted_config()))["id"])
            async with (
                asyncio.timeout(STREAM_TIMEOUT_SECONDS),
                client.stream(
                    "POST", f"/sessions/{running['id']}/turns", json={"input": "hi"}, headers=alice
                ) as response,
            ):
                frames = aiter(iter_frames(response))
                first = [await anext(frames) for _ in range(3)]
                server.process.send_signal(signal.SIGTERM)
                async with asyncio.timeout(10):
                    while (ready := await client.get("/readyz")).status_code == 200:
                        await asyncio.sleep(0.05)
                assert ready.status_code == 503
                assert ready.json()["reason"] == "draining"

                refused = await client.post(f"/sessions/{waiting['id']}/turns", json={"input": "hi"}, headers=alice)
                assert refused.status_code == 503
                assert refused.headers["content-type"] == "application/problem+json"
                assert int(refused.headers["Retry-After"]) >= 1
                assert refused.json()["reason"] == "draining"

                turn_id = first[0].data["turn_id"]
                during = await client.get(f"/turns/{turn_id}", headers=alice)
                assert during.status_code == 200, "the draining replica still answers reads"

                rest = [frame async for frame in frames]
            ended = rest[-1]
            assert ended.event == "turn.ended"
            assert ended.data["status"] == "completed"
            assert ended.data["final_output"] == WORDS
            assert [f.id for f in first + rest] == list(range(1, len(first) + len(rest) + 1))
        async with sql.connect() as conn:  # (the replica may be gone already: its last turn ended)
            stored = await conn.scalar(select(func.count()).where(Turn.session_id == uuid.UUID(waiting["id"])))
        assert stored == 0, "the refused turn stored nothing"
        assert server.process.wait(timeout=30) == 0


async def test_a_draining_replica_is_unready_and_refuses_a_turn_before_storing_it(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    alice = auth_headers(tenant, "alice")
    settings: Settings = make_settings(database_url, tmp_path)
    async with running_app(settings) as (app, client):
        session = await create_session(client, alice, (await create_agent(client, alice, scripted_config()))["id"])
        assert (await client.get("/readyz")).status_code == 200
        assert await app.state.container.turns.drain(0) == 0
        ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["reason"] == "draining"
        refused = await client.post(f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
        assert refused.status_code == 503
        assert refused.headers["Retry-After"] == "5"
        assert refused.json()["reason"] == "draining"
        assert (await client.get(f"/sessions/{session['id']}/turns", headers=alice)).json()["items"] == []


async def test_a_json_turn_request_on_a_replica_that_hands_its_turn_over_answers_202_with_where_to_follow(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory, client: httpx.AsyncClient
) -> None:
    """The turn goes on elsewhere (here: the shared test app continues it), so the answer is the
    turn as it is and where to follow it, not a 200 that reads as the turn's outcome."""
    alice = auth_headers(tenant, "alice")
    async with running_app(make_settings(database_url, tmp_path)) as (app, own):
        session = await slow_session(own, alice, text=WORDS, delay_ms=50)
        request = asyncio.create_task(
            own.post(
                f"/sessions/{session['id']}/turns",
                json={"input": "hi"},
                headers={**alice, "Accept": "application/json"},
            )
        )
        turn_id = await live_turn_of(app, own, alice, session["id"])
        assert await app.state.container.turns.drain(0) == 1
        response = await request

    assert response.status_code == 202
    assert response.headers["Location"] == f"/turns/{turn_id}"
    assert "Preference-Applied" not in response.headers, "the client did not ask for it"
    assert (response.json()["id"], response.json()["status"]) == (turn_id, "running")
    turn = await wait_for_status(client, alice, turn_id)
    assert (turn["status"], turn["final_output"]) == ("completed", WORDS), "another replica finished it"


async def test_a_json_request_for_a_queued_turn_on_a_draining_replica_answers_202_with_where_to_follow(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory, client: httpx.AsyncClient
) -> None:
    """A queued turn never starts on a draining replica: the request waiting for it as JSON gets the
    turn as it is and where to follow it, before the server's shutdown would cut the request."""
    alice = auth_headers(tenant, "alice")
    async with running_app(make_settings(database_url, tmp_path)) as (app, own):
        session = await slow_session(own, alice, text=WORDS, delay_ms=50)
        await own.post(f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers={**alice, **ASYNC})
        request = asyncio.create_task(
            own.post(
                f"/sessions/{session['id']}/turns",
                json={"input": "and then", "multitask_strategy": "enqueue"},
                headers={**alice, "Accept": "application/json"},
            )
        )
        queued_id = await queued_turn_of(own, alice, session["id"])
        await app.state.container.turns.drain(0)
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            response = await request

    assert response.status_code == 202
    assert response.headers["Location"] == f"/turns/{queued_id}"
    assert response.json()["id"] == queued_id
    assert response.json()["status"] in ("queued", "running"), "no outcome yet: it goes on elsewhere"
    assert (await wait_for_status(client, alice, queued_id))["status"] == "completed", "another replica ran it"


ASYNC = {"Prefer": "respond-async"}


async def queued_turn_of(client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> str:
    """The id of the session's queued turn once it is stored (bounded polling)."""
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            items = (await client.get(f"/sessions/{session_id}/turns", headers=headers)).json()["items"]
            queued = [item["id"] for item in items if item["status"] == "queued"]
            if queued:
                return str(queued[0])
            await asyncio.sleep(0.02)


async def live_turn_of(app: FastAPI, client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> str:
    """The id of the session's turn once it runs in `app` (bounded polling)."""
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            items = (await client.get(f"/sessions/{session_id}/turns", headers=headers)).json()["items"]
            if items and app.state.container.turns.live(uuid.UUID(items[0]["id"])) is not None:
                return str(items[0]["id"])
            await asyncio.sleep(0.02)
