"""Done-when: a turn streams over real HTTP from uvicorn on loopback, read by a real HTTP client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from app.settings import HttpSettings, Settings
from tests.conftest import TokenFactory, make_settings
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import iter_frames, read_turn
from tests.turns.loopback import serve_on_loopback
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session


async def test_turn_streams_ordered_events_over_a_real_socket(
    settings: Settings, tenant: str, auth_headers: TokenFactory
) -> None:
    headers = auth_headers(tenant, "alice")
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        config = scripted_config(
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}, {"text": "It is 4"}
        )
        agent = await create_agent(http, headers, config)
        session = await create_session(http, headers, agent["id"])
        async with (
            asyncio.timeout(POLL_TIMEOUT_SECONDS),
            http.stream(
                "POST", f"/sessions/{session['id']}/turns", json={"input": "2+2?"}, headers=headers
            ) as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            frames = [frame async for frame in iter_frames(response)]
    types = [f.event for f in frames]
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert types[0] == "turn.started"
    assert types[-1] == "turn.ended"
    assert types.count("turn.ended") == 1
    order = ["tool_call.requested", "tool_call.completed", "message.delta", "message.completed", "usage"]
    positions = [types.index(order[0]), types.index(order[1])]
    positions += [len(types) - 1 - types[::-1].index(t) for t in order[2:]]
    assert positions == sorted(positions)
    completed = next(f for f in frames if f.event == "tool_call.completed")
    assert completed.data["result"] == "4"
    assert frames[-1].data["status"] == "completed"
    assert frames[-1].data["final_output"] == "It is 4"


async def test_idle_stream_carries_ping_comments_and_a_finished_replay_still_closes(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    headers = auth_headers(tenant, "alice")
    settings = make_settings(database_url, tmp_path, http=HttpSettings(sse_ping_seconds=1))
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        session = await slow_session(http, headers, delay_ms=2000)
        url = f"/sessions/{session['id']}/turns"
        async with (
            asyncio.timeout(POLL_TIMEOUT_SECONDS),
            http.stream("POST", url, json={"input": "x"}, headers=headers) as response,
        ):
            turn_id = None
            async for line in response.aiter_lines():
                if line.startswith("data: ") and turn_id is None:
                    turn_id = json.loads(line.removeprefix("data: "))["turn_id"]
                if line.startswith(":") and "ping" in line:
                    break
            assert turn_id is not None
            assert (await http.post(f"/turns/{turn_id}/cancel", headers=headers)).json()["status"] == "cancelled"
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(http, "GET", f"/turns/{turn_id}/events", headers=headers)
    assert frames[-1].event == "turn.ended"
    assert frames[-1].data["status"] == "cancelled"
