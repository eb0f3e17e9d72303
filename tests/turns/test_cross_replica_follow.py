"""Two app instances on one database stand in for two replicas behind a load balancer."""

from __future__ import annotations

import asyncio

import httpx

from app.settings import Settings
from tests.conftest import running_app
from tests.sse import iter_frames, read_turn
from tests.turns.loopback import serve_on_loopback
from tests.turns.support import slow_session

LONG_TEXT = " ".join(f"word{i}" for i in range(40))


async def test_follower_on_another_replica_receives_every_event_live(settings: Settings, alice: dict[str, str]) -> None:
    async with (
        serve_on_loopback(settings) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as runner,
        running_app(settings) as (_, follower),
    ):
        session = await slow_session(runner, alice, text=LONG_TEXT, delay_ms=20)
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


async def test_cancel_sent_to_another_replica_stops_the_running_turn(settings: Settings, alice: dict[str, str]) -> None:
    long_text = " ".join(f"w{i}" for i in range(3000))
    async with (
        serve_on_loopback(settings) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as runner,
        running_app(settings) as (_, other),
    ):
        session = await slow_session(runner, alice, text=long_text, delay_ms=20)
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
