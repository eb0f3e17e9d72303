"""`GET /turns/{id}/events` of a turn interrupted and then resumed streams through to its final
`turn.ended`; the intermediate one (`interrupted`) stays in the log and in the stream."""

from __future__ import annotations

import httpx

from tests.approvals.helpers import gated_config
from tests.factories import create_agent, create_session
from tests.sse import Frame, parse

JSON = {"Accept": "application/json"}


async def _interrupted_turn(client: httpx.AsyncClient, headers: dict[str, str]) -> tuple[str, str]:
    agent = await create_agent(client, headers, gated_config())
    session = await create_session(client, headers, agent["id"])
    started = await client.post(f"/sessions/{session['id']}/turns", json={"input": "go"}, headers={**headers, **JSON})
    turn = started.json()
    assert turn["status"] == "interrupted"
    approval = (await client.get(f"/approvals?session_id={session['id']}", headers=headers)).json()
    return turn["id"], approval["items"][0]["id"]


def _ended(frames: list[Frame]) -> list[str]:
    return [f.data["status"] for f in frames if f.event == "turn.ended"]


async def test_replay_of_a_resumed_turn_runs_through_to_the_final_end(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    turn_id, approval_id = await _interrupted_turn(client, alice)
    decided = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers={**alice, **JSON})
    assert decided.json()["status"] == "completed"

    frames = parse((await client.get(f"/turns/{turn_id}/events", headers=alice)).text)
    assert _ended(frames) == ["interrupted", "completed"]
    assert frames[-1].event == "turn.ended"
    assert [f.data["seq"] for f in frames] == list(range(1, len(frames) + 1))  # no gap, no repeat
    restarts = [f.data for f in frames if f.event == "turn.started"]
    assert [s["resumed_by"] for s in restarts] == [None, approval_id]

    interrupted_at = next(f.data["seq"] for f in frames if f.event == "turn.ended")
    tail = parse((await client.get(f"/turns/{turn_id}/events", headers={**alice, "Last-Event-ID": "3"})).text)
    assert [f.data["seq"] for f in tail] == list(range(4, len(frames) + 1))
    after_interrupt = parse((await client.get(f"/turns/{turn_id}/events?after={interrupted_at}", headers=alice)).text)
    assert after_interrupt[0].event == "turn.started"
    assert _ended(after_interrupt) == ["completed"]


async def test_replay_of_a_turn_still_waiting_ends_at_its_interrupt(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    turn_id, _ = await _interrupted_turn(client, alice)
    frames = parse((await client.get(f"/turns/{turn_id}/events", headers=alice)).text)
    assert _ended(frames) == ["interrupted"]
    assert frames[-1].event == "turn.ended"


async def test_a_denied_then_finished_turn_replays_to_its_end(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    turn_id, approval_id = await _interrupted_turn(client, alice)
    await client.post(f"/approvals/{approval_id}", json={"decision": "deny"}, headers={**alice, **JSON})
    frames = parse((await client.get(f"/turns/{turn_id}/events", headers=alice)).text)
    assert _ended(frames) == ["interrupted", "completed"]
    human = [f.data for f in frames if f.event == "tool_call.completed" and f.data["is_error"]]
    assert human
