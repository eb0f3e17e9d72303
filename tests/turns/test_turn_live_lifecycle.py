"""What only a real socket shows: disconnects, rejoins, cancels and slow readers mid-stream.

Every long turn here is cancelled by the test; the others are short. Nothing asserts on timing;
eventual states are polled with a bound.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.sse import read_turn
from tests.turns.support import (
    POLL_TIMEOUT_SECONDS,
    FrameReader,
    get_turn,
    slow_session,
    wait_for_status,
)

PROBLEM = "application/problem+json"
SHORT_TEXT = " ".join(f"w{i}" for i in range(60))


def _turns_url(session: dict[str, object]) -> str:
    return f"/sessions/{session['id']}/turns"


async def _replay(client: httpx.AsyncClient, turn_id: str, headers: dict[str, str]) -> list:  # type: ignore[type-arg]
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        return await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=headers)


async def test_disconnected_clients_turn_still_completes_and_its_events_are_complete(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice, text=SHORT_TEXT, delay_ms=20)
    async with live_client.stream("POST", _turns_url(session), json={"input": "talk"}, headers=alice) as response:
        first = await FrameReader(response).until("message.delta")
    turn_id = first[0].data["turn_id"]
    turn = await wait_for_status(live_client, alice, turn_id)
    assert turn["status"] == "completed"
    assert turn["final_output"] == SHORT_TEXT
    replayed = await _replay(live_client, turn_id, alice)
    assert [f.id for f in replayed] == list(range(1, len(replayed) + 1))
    assert replayed[-1].event == "turn.ended"
    assert replayed[-1].data["status"] == "completed"
    assert "".join(f.data["text"] for f in replayed if f.event == "message.delta") == SHORT_TEXT


async def test_rejoining_a_running_turn_with_last_event_id_gets_exactly_the_rest(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice, text=SHORT_TEXT, delay_ms=20)
    async with live_client.stream("POST", _turns_url(session), json={"input": "talk"}, headers=alice) as response:
        first = await FrameReader(response).until("message.delta")
    turn_id, k = first[0].data["turn_id"], first[-1].id
    async with live_client.stream(
        "GET", f"/turns/{turn_id}/events", headers={**alice, "Last-Event-ID": str(k)}
    ) as response:
        assert response.status_code == 200
        rest = await FrameReader(response).rest()
    assert [f.id for f in rest] == list(range(k + 1, k + 1 + len(rest)))
    assert rest[-1].event == "turn.ended"
    assert rest[-1].data["status"] == "completed"
    whole = await _replay(live_client, turn_id, alice)
    assert [f.data for f in first + rest] == [f.data for f in whole]


async def test_slow_subscriber_does_not_block_the_turn_and_still_gets_every_frame(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice, text=SHORT_TEXT, delay_ms=5)
    async with live_client.stream("POST", _turns_url(session), json={"input": "talk"}, headers=alice) as response:
        reader = FrameReader(response)
        first = await reader.until("turn.started")
        turn = await wait_for_status(live_client, alice, first[0].data["turn_id"])
        assert turn["status"] == "completed"
        rest = await reader.rest()
    frames = first + rest
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert frames[-1].event == "turn.ended"
    assert frames[-1].id == turn["last_seq"]


async def test_cancel_stops_a_running_turn_and_the_session_stays_usable(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice)
    async with live_client.stream("POST", _turns_url(session), json={"input": "talk"}, headers=alice) as response:
        reader = FrameReader(response)
        first = await reader.until("message.delta")
        turn_id = first[0].data["turn_id"]
        cancelled = await live_client.post(f"/turns/{turn_id}/cancel", headers=alice)
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        rest = await reader.rest()
    ended = rest[-1]
    assert ended.event == "turn.ended"
    assert [f.event for f in rest].count("turn.ended") == 1
    assert ended.data["status"] == "cancelled"
    assert ended.data["error"] is None
    assert (await get_turn(live_client, alice, turn_id))["status"] == "cancelled"
    replayed = await _replay(live_client, turn_id, alice)
    assert replayed[-1].data["status"] == "cancelled"
    assert "message.completed" not in [f.event for f in replayed]

    async with live_client.stream("POST", _turns_url(session), json={"input": "again"}, headers=alice) as response:
        assert response.status_code == 200
        reader = FrameReader(response)
        second = await reader.until("message.delta")
        assert second[0].data["turn_id"] != turn_id
        await live_client.post(f"/turns/{second[0].data['turn_id']}/cancel", headers=alice)
        assert (await reader.rest())[-1].data["status"] == "cancelled"
    assert (await get_turn(live_client, alice, turn_id))["status"] == "cancelled"


async def test_cancel_of_a_finished_turn_is_409_and_keeps_its_status(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice, text="quick", delay_ms=0)
    frames = await read_turn(live_client, "POST", _turns_url(session), json={"input": "hi"}, headers=alice)
    turn_id = frames[0].data["turn_id"]
    response = await live_client.post(f"/turns/{turn_id}/cancel", headers=alice)
    assert response.status_code == 409
    assert response.headers["content-type"] == PROBLEM
    assert "completed" in response.json()["detail"]
    assert (await get_turn(live_client, alice, turn_id))["status"] == "completed"


async def test_second_turn_while_one_runs_is_409_naming_the_active_turn(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice)
    async with live_client.stream("POST", _turns_url(session), json={"input": "talk"}, headers=alice) as response:
        reader = FrameReader(response)
        turn_id = (await reader.until("turn.started"))[0].data["turn_id"]
        for accept in ("text/event-stream", "application/json"):
            busy = await live_client.post(
                _turns_url(session), json={"input": "me too"}, headers={**alice, "Accept": accept}
            )
            assert busy.status_code == 409
            assert busy.headers["content-type"] == PROBLEM
            body = busy.json()
            assert body["active_turn_id"] == turn_id
            assert turn_id in body["detail"]
        await live_client.post(f"/turns/{turn_id}/cancel", headers=alice)
        await reader.rest()
    listed = (await live_client.get(_turns_url(session), headers=alice)).json()["items"]
    assert [t["id"] for t in listed] == [turn_id]


async def test_concurrent_cancels_all_see_cancelled_and_the_stream_still_ends_with_turn_ended(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice)
    async with live_client.stream("POST", _turns_url(session), json={"input": "talk"}, headers=alice) as response:
        reader = FrameReader(response)
        turn_id = (await reader.until("message.delta"))[0].data["turn_id"]
        answers = await asyncio.gather(*(live_client.post(f"/turns/{turn_id}/cancel", headers=alice) for _ in range(5)))
        rest = await reader.rest()
    assert rest[-1].event == "turn.ended"
    assert rest[-1].data["status"] == "cancelled"
    for answer in answers:
        assert answer.status_code in (200, 409), answer.text
        if answer.status_code == 200:
            assert answer.json()["status"] == "cancelled"
    assert (await get_turn(live_client, alice, turn_id))["status"] == "cancelled"
    replayed = await _replay(live_client, turn_id, alice)
    assert [f.event for f in replayed].count("turn.ended") == 1


async def test_two_simultaneous_starts_on_one_session_admit_exactly_one(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await slow_session(live_client, alice)
    requests = [
        live_client.build_request("POST", _turns_url(session), json={"input": f"race {i}"}, headers=alice)
        for i in range(2)
    ]
    responses = await asyncio.gather(*(live_client.send(r, stream=True) for r in requests))
    try:
        assert sorted(r.status_code for r in responses) == [200, 409]
        winner = next(r for r in responses if r.status_code == 200)
        loser = next(r for r in responses if r.status_code == 409)
        assert loser.headers["content-type"] == PROBLEM
        body = json.loads(await loser.aread())
        reader = FrameReader(winner)
        turn_id = (await reader.until("turn.started"))[0].data["turn_id"]
        assert body["active_turn_id"] == turn_id
        await live_client.post(f"/turns/{turn_id}/cancel", headers=alice)
        assert (await reader.rest())[-1].data["status"] == "cancelled"
    finally:
        for response in responses:
            await response.aclose()


async def test_json_client_that_gives_up_leaves_the_turn_running_to_completion(
    live_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    # The turn sleeps 59 x 20 ms between its words, so it cannot answer within the 0.3 s read timeout.
    session = await slow_session(live_client, alice, text=SHORT_TEXT, delay_ms=20)
    headers = {**alice, "Accept": "application/json"}
    with pytest.raises(httpx.ReadTimeout):
        await live_client.post(_turns_url(session), json={"input": "talk"}, headers=headers, timeout=0.3)
    listed = (await live_client.get(_turns_url(session), headers=alice)).json()["items"]
    assert len(listed) == 1
    turn = await wait_for_status(live_client, alice, listed[0]["id"])
    assert turn["status"] == "completed"
    assert turn["final_output"] == SHORT_TEXT
