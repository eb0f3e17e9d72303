from __future__ import annotations

import httpx

from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn


async def _session(client: httpx.AsyncClient, headers: dict[str, str], *steps: dict, **extra: object) -> dict:
    agent = await create_agent(client, headers, scripted_config(*steps, **extra))
    return await create_session(client, headers, agent["id"])


async def test_text_reply_streams_events_in_order(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await _session(client, alice, {"text": "Hello there friend"})
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
    types = [f.event for f in frames]
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert types[0] == "turn.started"
    assert types[-1] == "turn.ended"
    assert "node.started" in types
    deltas = [f.data["text"] for f in frames if f.event == "message.delta"]
    completed = [f.data["text"] for f in frames if f.event == "message.completed"]
    assert "".join(deltas) == completed[0] == "Hello there friend"
    assert types.index("message.completed") < types.index("usage") < types.index("turn.ended")
    ended = frames[-1].data
    assert ended["status"] == "completed"
    assert ended["final_output"] == "Hello there friend"
    assert ended["usage"]["output_tokens"] == 3
    for frame in frames:
        assert frame.data["seq"] == frame.id
        assert frame.data["type"] == frame.event
        assert frame.data["turn_id"] == frames[0].data["turn_id"]


async def test_metrics_count_started_and_ended_turns(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await _session(client, alice, {"text": "counted"})
    await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
    metrics = (await client.get("/metrics")).text
    assert "agent_runtime_turns_started_total" in metrics
    assert 'agent_runtime_turns_ended_total{status="completed"}' in metrics
