"""Two app instances on one database stand in for two replicas behind a load balancer."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.conftest import running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import iter_frames, read_turn

LONG_TEXT = " ".join(f"word{i}" for i in range(40))


async def test_follower_on_another_replica_receives_every_event_live(settings: Any, alice: dict[str, str]) -> None:
    async with running_app(settings) as (_, runner_client), running_app(settings) as (other_app, follower):
        agent = await create_agent(runner_client, alice, scripted_config({"text": LONG_TEXT}, model={
            "provider": "scripted", "script": [{"text": LONG_TEXT}], "chunk_delay_ms": 20}))
        session = await create_session(runner_client, alice, agent["id"])
        async with runner_client.stream(
            "POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=alice
        ) as response:
            frames = iter_frames(response)
            first = await anext(frames)
            turn_id = first.data["turn_id"]
            assert other_app.state.container.turns.live(uuid.UUID(turn_id)) is None
            followed_task = asyncio.create_task(
                read_turn(follower, "GET", f"/turns/{turn_id}/events", headers=alice)
            )
            direct = [first] + [f async for f in frames]
        followed = await asyncio.wait_for(followed_task, timeout=30)
    assert [f.id for f in followed] == [f.id for f in direct]
    assert followed[-1].event == "turn.ended"
    assert followed[-1].data["status"] == "completed"
    assert "".join(f.data["text"] for f in followed if f.event == "message.delta") == LONG_TEXT
