"""SIGTERM drains a replica under load: the turns that finish within `SHUTDOWN_GRACE_SECONDS` end there,
the others are handed over (`turn.resumed`, reason `shutdown`) and finished by the other replica; the
draining replica refuses new turns (503 + `Retry-After`), keeps serving replays, and ends its
followers' streams with a `retry:` hint instead of a `turn.ended`. No turn fails.
"""

from __future__ import annotations

import httpx
import pytest

from tests.continuation.support import (
    WAIT_SECONDS,
    Follower,
    assert_gapless,
    deltas,
    drop_rule,
    one_ending,
    reconnect,
    replay,
    start_turn,
    until_unready,
)
from tests.live_server import LiveServer
from tests.turns.support import get_turn, slow_session

pytestmark = pytest.mark.timeout(180)

SHORT = " ".join(f"short{i}" for i in range(10))
LONG = " ".join(f"long{i}" for i in range(80))
DELAY_MS = 150
"""10 words at 150 ms end well inside the grace (conftest.GRACE_SECONDS); 80 words (12 s) outlast it."""


async def test_a_drained_replica_finishes_what_it_can_and_hands_the_rest_to_the_other(
    replicas: list[LiveServer], clients: list[httpx.AsyncClient], alice: dict[str, str]
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    long_turns = [
        start_turn(on_a, alice, await slow_session(on_a, alice, text=LONG, delay_ms=DELAY_MS)) for _ in range(2)
    ]
    for follower in long_turns:
        await follower.until(deltas(2), "a long turn streaming on A")
    short_turns = [
        start_turn(on_a, alice, await slow_session(on_a, alice, text=SHORT, delay_ms=DELAY_MS)) for _ in range(2)
    ]
    for follower in short_turns:
        await follower.until(deltas(1), "a short turn streaming on A")
    refused_session = await slow_session(on_a, alice, text=SHORT)

    a.terminate()
    await until_unready(on_a)
    refused = await on_a.post(f"/sessions/{refused_session['id']}/turns", json={"input": "go"}, headers=alice)
    replaying = Follower(on_a, "GET", f"/turns/{long_turns[0].turn_id}/events", headers=alice)

    assert refused.status_code == 503
    assert refused.headers["content-type"] == "application/problem+json"
    assert int(refused.headers["Retry-After"]) >= 1
    for follower in short_turns:
        await follower.ended()
        assert not follower.broken
        ended = one_ending(follower.frames)
        assert (ended["status"], ended["final_output"]) == ("completed", SHORT), "it ends on the draining replica"
        replayed = await Follower(on_a, "GET", f"/turns/{follower.turn_id}/events", headers=alice).ended()
        assert [(f.id, f.event) for f in replayed.frames] == [(f.id, f.event) for f in follower.frames]

    for follower in [*long_turns, replaying]:
        await follower.ended()
        assert not follower.broken, "a draining replica ends its streams, it does not drop them"
        assert follower.retries, "the stream ends with a retry: hint"
        assert not follower.of("turn.ended")
    assert a.process.wait(timeout=WAIT_SECONDS) == 0

    for follower in long_turns:
        rest = await reconnect(on_b, alice, follower).ended()
        assert rest.frames[0].event == "turn.resumed", [f.event for f in rest.frames[:5]]
        assert rest.frames[0].data["reason"] == "shutdown"
        view = drop_rule(follower.frames + rest.frames)
        ended = one_ending(view)
        assert (ended["status"], ended["final_output"]) == ("completed", LONG)
        stored = await replay(on_b, alice, follower.turn_id)
        assert_gapless(stored)
        assert [(f.id, f.event) for f in drop_rule(stored)] == [(f.id, f.event) for f in view]
    for follower in [*long_turns, *short_turns]:
        assert (await get_turn(on_b, alice, follower.turn_id))["status"] == "completed"
    assert (await on_b.get(f"/sessions/{refused_session['id']}/turns", headers=alice)).json()["items"] == []
