"""SIGKILL one of two replicas in the middle of a turn: the other continues it (`turn.resumed`,
reason `replica_lost`), no tool effect happens twice, and the client that reconnects with
`Last-Event-ID` sees, after its drop rule, the stream a run without the crash would have shown.

Two real `agent-runtime serve` processes share a PostgreSQL database; the turn starts on A, the kill
lands at a chosen point (text streaming, a tool call out at the recording gateway — also while A
drains, before its hand-over —, its outcome stored, an approved call running), and the client
follows the rest on B.
"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.continuation.support import (
    WAIT_SECONDS,
    Follower,
    Out,
    assert_gapless,
    batch,
    comparable,
    deltas,
    drop_rule,
    gateway_session,
    key_in,
    kill_and_reconnect,
    kill_while_out,
    ledger_outcome_stored,
    one_ending,
    replay,
    results,
    resumed_on_b,
    start_turn,
    tool_result_stored,
    until_unready,
)
from tests.idempotent_gateway import IdempotentGateway, wait_reached
from tests.live_server import LiveServer
from tests.sse import Frame
from tests.turns.support import get_turn

pytestmark = pytest.mark.timeout(180)

WORDS = " ".join(f"word{i}" for i in range(40))
DELAY_MS = 100
"""40 words at 100 ms: a model call still streaming when the kill lands after a few deltas."""
NEEDS_A_HUMAN = {
    "id": "issues-need-a-human",
    "point": "tool",
    "tool": "github__create_*",
    "verdict": "requires_approval",
    "reason": "opening issues needs a human",
}


async def test_a_replica_killed_while_the_model_streams_hands_the_turn_to_the_other(
    replicas: list[LiveServer], clients: list[httpx.AsyncClient], alice: dict[str, str]
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    session = await gateway_session(on_a, alice, {"text": WORDS}, delay_ms=DELAY_MS)
    follower = start_turn(on_a, alice, session)
    await follower.until(deltas(3), "text streaming on A")

    rest = await kill_and_reconnect(a, follower, on_b, alice)

    resumed = resumed_on_b(follower, rest)
    assert resumed["from_loop"] == 0
    ended = one_ending(drop_rule(follower.frames + rest.frames))
    assert (ended["status"], ended["final_output"]) == ("completed", WORDS)
    assert (await get_turn(on_b, alice, follower.turn_id))["status"] == "completed"


@pytest.mark.parametrize("draining", [False, True], ids=["running", "draining before its hand-over"])
async def test_a_call_not_yet_sent_when_its_replica_dies_is_sent_once_by_the_other(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    alice: dict[str, str],
    gateway: IdempotentGateway,
    draining: bool,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    session = await gateway_session(on_a, alice, batch("held", "later"), {"text": "both filed"})
    held = Out(gateway, "held")
    follower = start_turn(on_a, alice, session)
    await wait_reached(held.hold, timeout=WAIT_SECONDS)
    later_key = await key_in(follower, session, "call_0_1")
    assert held.key == await key_in(follower, session, "call_0_0")
    assert gateway.effects.sent(later_key) == 0, "A sends the batch in order: the second call waits"
    if draining:
        a.terminate()
        await until_unready(on_a)  # its grace runs (the held call keeps the turn going): nothing handed over yet

    rest = await kill_while_out(a, follower, on_b, alice, held)

    assert gateway.effects.sent(later_key) == 1
    resumed_on_b(follower, rest)  # `replica_lost`: a hand-over cut short by the kill left nothing behind
    assert_gapless(await replay(on_b, alice, follower.turn_id))
    view = drop_rule(follower.frames + rest.frames)
    assert one_ending(view)["status"] == "completed"
    assert gateway.effects.per_key() == {held.key: 1, later_key: 1}
    assert results(view) == {"call_0_0": "created issue: held", "call_0_1": "created issue: later"}


async def test_a_call_out_at_the_gateway_when_its_replica_dies_is_re_sent_under_its_key_and_runs_once(
    replicas: list[LiveServer], clients: list[httpx.AsyncClient], alice: dict[str, str], gateway: IdempotentGateway
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    session = await gateway_session(on_a, alice, batch("done before", "held"), {"text": "both filed"})
    held = Out(gateway, "held")
    follower = start_turn(on_a, alice, session)
    done_key = await key_in(follower, session, "call_0_0")

    rest = await kill_while_out(a, follower, on_b, alice, held)

    resumed_on_b(follower, rest)
    view = drop_rule(follower.frames + rest.frames)
    assert one_ending(view)["status"] == "completed"
    assert gateway.effects.sent(done_key) == 1, "a completed call is never sent again"
    re_sent = [r for r in gateway.gateway.rpc("tools/call") if r.idempotency_key == held.key]
    assert [r.tool_arguments for r in re_sent] == [{"title": "held"}, {"title": "held"}]
    assert gateway.effects.per_key() == {done_key: 1, held.key: 1}
    assert results(view)["call_0_1"] == "created issue: held"


async def test_a_replica_killed_after_a_tool_outcome_is_stored_never_sends_that_call_again(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    alice: dict[str, str],
    gateway: IdempotentGateway,
    replica_sql: AsyncEngine,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    session = await gateway_session(on_a, alice, batch("stored"), {"text": WORDS}, delay_ms=DELAY_MS)
    follower = start_turn(on_a, alice, session)
    key = await key_in(follower, session, "call_0_0")
    await ledger_outcome_stored(replica_sql, key)
    await tool_result_stored(replica_sql, session, "call_0_0")

    rest = await kill_and_reconnect(a, follower, on_b, alice)

    resumed = resumed_on_b(follower, rest)
    assert resumed["from_loop"] == 1
    ended = one_ending(drop_rule(follower.frames + rest.frames))
    assert (ended["status"], ended["final_output"]) == ("completed", WORDS)
    assert gateway.effects.sent(key) == 1
    assert gateway.effects.per_key() == {key: 1}


@pytest.mark.parametrize("kill_point", ["approved call out", "approved call stored"])
async def test_a_replica_killed_while_resuming_an_approval_is_continued_without_asking_again(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    alice: dict[str, str],
    gateway: IdempotentGateway,
    replica_sql: AsyncEngine,
    kill_point: str,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    session = await gateway_session(
        on_a, alice, batch("approved"), {"text": WORDS}, delay_ms=DELAY_MS, policies=[NEEDS_A_HUMAN]
    )
    interrupted = await start_turn(on_a, alice, session).ended()
    assert one_ending(interrupted.frames)["status"] == "interrupted"
    key = await key_in(interrupted, session, "call_0_0")
    [required] = interrupted.of("approval.required")
    out = Out(gateway, "approved") if kill_point == "approved call out" else None

    url = f"/approvals/{required.data['approval_id']}"
    follower = Follower(on_a, "POST", url, json={"decision": "approve"}, headers=alice)
    if out is not None:
        rest = await kill_while_out(a, follower, on_b, alice, out)
    else:
        await ledger_outcome_stored(replica_sql, key)
        rest = await kill_and_reconnect(a, follower, on_b, alice)

    resumed_on_b(follower, rest)
    ended = one_ending(drop_rule(follower.frames + rest.frames))
    assert (ended["status"], ended["final_output"]) == ("completed", WORDS)
    assert not rest.of("approval.required"), "no second approval is asked"
    approvals = (await on_b.get("/approvals", params={"session_id": session["id"]}, headers=alice)).json()
    assert [(item["id"], item["status"]) for item in approvals["items"]] == [(required.data["approval_id"], "approved")]
    assert gateway.effects.per_key() == {key: 1}
    assert gateway.effects.sent(key) == (2 if out is not None else 1)


@pytest.mark.parametrize("kill_point", ["model streaming", "tool call out"])
async def test_the_reconnected_client_sees_the_stream_of_a_run_without_the_crash(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    alice: dict[str, str],
    gateway: IdempotentGateway,
    kill_point: str,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    steps = [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
        batch("held"),
        {"text": WORDS},
    ]
    session = await gateway_session(on_a, alice, *steps, delay_ms=DELAY_MS)
    out = Out(gateway, "held") if kill_point == "tool call out" else None
    follower = start_turn(on_a, alice, session)
    if out is not None:
        rest = await kill_while_out(a, follower, on_b, alice, out)
    else:
        await follower.until(deltas(3), "text streaming on A")
        rest = await kill_and_reconnect(a, follower, on_b, alice)

    resumed_on_b(follower, rest)
    received = follower.frames + rest.frames
    assert [f.id for f in received] == sorted({f.id for f in received}), "ids strictly increase"
    view = drop_rule(received)
    assert one_ending(view)["status"] == "completed"
    stored = await replay(on_b, alice, follower.turn_id)
    assert_gapless(stored)
    assert [(f.id, f.event, f.data) for f in drop_rule(stored)] == [(f.id, f.event, f.data) for f in view]
    assert _text_after_resume(view) == WORDS, "the model call made again streams its whole text"

    baseline_session = await gateway_session(on_b, alice, *steps, delay_ms=0)
    baseline = await start_turn(on_b, alice, baseline_session).ended()
    assert comparable(view) == comparable(baseline.frames)


def _text_after_resume(frames: list[Frame]) -> str:
    """The text B streamed (deltas) for its first model call after `turn.resumed`."""
    index = next(i for i, f in enumerate(frames) if f.event == "turn.resumed")
    text = ""
    for frame in frames[index:]:
        if frame.event == "message.completed":
            return text
        if frame.event == "message.delta":
            text += frame.data["text"]
    return text
