"""GET /turns/{id}/events: replay after Last-Event-ID (or ?after=), then close at turn.ended."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.conftest import TokenFactory
from tests.sse import Frame, read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session

TOOL_THEN_TEXT = (
    {"tool_calls": [{"name": "echo", "arguments": {"text": "ping"}}]},
    {"text": "all done now"},
)


async def _finished_turn(client: httpx.AsyncClient, headers: dict[str, str]) -> list[Frame]:
    session = await scripted_session(client, headers, *TOOL_THEN_TEXT)
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=headers)
    assert frames[-1].event == "turn.ended"
    return frames


async def _replay(client: httpx.AsyncClient, url: str, **kwargs: object) -> list[Frame]:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        return await read_turn(client, "GET", url, **kwargs)


def _seqs(frames: list[Frame]) -> list[int]:
    return [f.id for f in frames]


async def test_replay_from_the_start_returns_every_stored_event(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    live = await _finished_turn(client, alice)
    replayed = await _replay(client, f"/turns/{live[0].data['turn_id']}/events", headers=alice)
    assert [(f.id, f.event, f.data) for f in replayed] == [(f.id, f.event, f.data) for f in live]


@pytest.mark.parametrize("k", [1, 5, -2])
async def test_last_event_id_replays_exactly_the_events_after_it(
    client: httpx.AsyncClient, alice: dict[str, str], k: int
) -> None:
    live = await _finished_turn(client, alice)
    k = k if k > 0 else len(live) + k
    headers = {**alice, "Last-Event-ID": str(k)}
    replayed = await _replay(client, f"/turns/{live[0].data['turn_id']}/events", headers=headers)
    assert _seqs(replayed) == list(range(k + 1, len(live) + 1))
    assert [f.data for f in replayed] == [f.data for f in live[k:]]
    assert replayed[-1].event == "turn.ended"


async def test_after_query_replays_exactly_the_events_after_it(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    live = await _finished_turn(client, alice)
    k = 3
    replayed = await _replay(client, f"/turns/{live[0].data['turn_id']}/events?after={k}", headers=alice)
    assert _seqs(replayed) == list(range(k + 1, len(live) + 1))


async def test_last_event_id_header_wins_over_the_after_query(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    live = await _finished_turn(client, alice)
    headers = {**alice, "Last-Event-ID": "4"}
    replayed = await _replay(client, f"/turns/{live[0].data['turn_id']}/events?after=1", headers=headers)
    assert _seqs(replayed)[0] == 5


async def test_rejoining_after_the_last_event_closes_at_once_with_nothing(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    live = await _finished_turn(client, alice)
    headers = {**alice, "Last-Event-ID": str(len(live))}
    replayed = await _replay(client, f"/turns/{live[0].data['turn_id']}/events", headers=headers)
    assert replayed == []


async def test_replay_of_another_users_turn_is_404_problem(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    live = await _finished_turn(client, alice)
    bob = auth_headers(tenant, "bob")
    response = await client.get(f"/turns/{live[0].data['turn_id']}/events", headers=bob)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
