"""A second crash: the replica that continues a turn dies too, and a third continues it. Each tool
effect still happens once (the recording gateway deduplicates on the idempotency key the service
re-sends) and the stored stream is gapless, each continuation numbering above the one before.
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.continuation.conftest import CLIENT_TIMEOUT_SECONDS
from tests.continuation.replicas import ReplicaPool
from tests.continuation.support import (
    WAIT_SECONDS,
    Out,
    assert_gapless,
    batch,
    drop_rule,
    gateway_session,
    key_in,
    kill,
    one_ending,
    replay,
    results,
    start_turn,
    until_stored,
    wait_for,
)
from tests.idempotent_gateway import IdempotentGateway, wait_reached
from tests.live_server import LiveServer
from tests.turns.support import get_turn, runner_of

pytestmark = pytest.mark.timeout(180)
RESUMED_ONCE = text("SELECT count(*) = 1 FROM turn_events WHERE turn_id = :turn AND type = 'turn.resumed'")


async def test_a_turn_whose_continuing_replica_dies_too_is_finished_by_a_third_with_each_effect_once(
    replica_pool: ReplicaPool,
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    alice: dict[str, str],
    gateway: IdempotentGateway,
    replica_sql: AsyncEngine,
) -> None:
    (a, _), (on_a, _) = replicas, clients
    session = await gateway_session(on_a, alice, batch("one", "held", "three"), {"text": "all filed"})
    held = Out(gateway, "held")
    follower = start_turn(on_a, alice, session)
    await wait_reached(held.hold, timeout=WAIT_SECONDS)
    one_key, three_key = [await key_in(follower, session, f"call_0_{i}") for i in (0, 2)]
    assert held.key == await key_in(follower, session, "call_0_1")
    await kill(a, follower)
    await wait_for(lambda: gateway.effects.sent(held.key) == 2, "a second replica re-sending the call that was out")

    resumes = {"turn": uuid.UUID(follower.turn_id)}
    await until_stored(replica_sql, RESUMED_ONCE, resumes, "the second replica's turn.resumed")
    continuing = await runner_of(replica_sql, resumes["turn"])
    replica_pool.kill(replica_pool.running(str(continuing)))
    await wait_for(lambda: gateway.effects.sent(held.key) == 3, "a third replica re-sending it again")
    gateway.effects.release(held.title)
    async with httpx.AsyncClient(base_url=replica_pool.survivor.base_url, timeout=CLIENT_TIMEOUT_SECONDS) as on_c:
        stored = await replay(on_c, alice, follower.turn_id)  # follows the turn to its end
        turn = await get_turn(on_c, alice, follower.turn_id)

    assert (turn["status"], turn["final_output"]) == ("completed", "all filed")
    assert_gapless(stored)
    assert [f.data["reason"] for f in stored if f.event == "turn.resumed"] == ["replica_lost", "replica_lost"]
    view = drop_rule(stored)
    assert one_ending(view)["status"] == "completed"
    assert gateway.effects.per_key() == {one_key: 1, held.key: 1, three_key: 1}, "every effect happened once"
    assert gateway.effects.sent(one_key) == 1, "a completed call is never sent again"
    assert results(view) == {f"call_0_{i}": f"created issue: {t}" for i, t in enumerate(("one", "held", "three"))}
