"""Two app instances on one database stand in for two replicas behind a load balancer."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from app.settings import Settings
from tests.conftest import running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import iter_frames, read_turn
from tests.turns.loopback import serve_on_loopback

LONG_TEXT = " ".join(f"word{i}" for i in range(40))


def slow_config(text: str, delay_ms: int) -> dict[str, Any]:
    return scripted_config(model={"provider": "scripted", "script": [{"text": text}], "chunk_delay_ms": delay_ms})


async def test_follower_on_another_replica_receives_every_event_live(
    settings: Settings, alice: dict[str, str]
) -> None:
    async with (
        serve_on_loopback(settings) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as runner,
        running_app(settings) as (_, follower),
    ):
        agent = await create_agent(runner, alice, slow_config(LONG_TEXT, 20))
        session = await create_session(runner, alice, agent["id"])
        async with runner.stream("POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=alice) as r:
            frames = iter_frames(r)
            first = await anext(frames)
            followed_task = asyncio.create_task(
                read_turn(follower, "GET", f"/turns/{first.data['turn_id']}/events", headers=alice)
            )
            direct = [first] + [f async for f in frames]
        followed = await asyncio.wait_for(followed_task, timeout=30)
    assert [f.id for f in followed] == [f.id for f in direct]
    assert followed[-1].event == "turn.ended"
    assert followed[-1].data["status"] == "completed"
    assert "".join(f.data["text"] for f in followed if f.event == "message.delta") == LONG_TEXT


async def test_cancel_sent_to_another_replica_stops_the_running_turn(
    settings: Settings, alice: dict[str, str]
) -> None:
    long_text = " ".join(f"w{i}" for i in range(3000))
    async with (
        serve_on_loopback(settings) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as runner,
        running_app(settings) as (_, other),
    ):
        agent = await create_agent(runner, alice, slow_config(long_text, 20))
        session = await create_session(runner, alice, agent["id"])
        async with runner.stream("POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=alice) as r:
            frames = iter_frames(r)
            turn_id = (await anext(frames)).data["turn_id"]
            cancelled = await other.post(f"/turns/{turn_id}/cancel", headers=alice)
            rest = [f async for f in frames]
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert rest[-1].event == "turn.ended"
    assert rest[-1].data["status"] == "cancelled"
    assert len([f for f in rest if f.event == "message.delta"]) < 3000
