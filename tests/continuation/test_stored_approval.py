"""A replica dies after a gated call's approval row is stored and before its turn ends `interrupted`.

The batch is `held` (out at the gateway when A is killed) then `gated` (needs a human). The row A
would have stored for `gated` just before dying is written into the database while `held` is out,
then A is SIGKILLed: the continuation on B re-sends `held`, reaches `gated`, and must find that
stored approval and interrupt on it (not insert a second one, which the unique constraint refuses).
The approval then resumes the turn as usual.
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.governance.policy import arguments_hash
from app.models import Approval, Turn
from app.models.base import utcnow
from tests.continuation.support import (
    WAIT_SECONDS,
    Follower,
    Out,
    batch,
    drop_rule,
    gateway_session,
    key_in,
    kill,
    one_ending,
    reconnect,
    resumed_on_b,
    start_turn,
    wait_for,
)
from tests.idempotent_gateway import IdempotentGateway, wait_reached
from tests.live_server import LiveServer

pytestmark = pytest.mark.timeout(180)

GATED = {
    "id": "gated-needs-a-human",
    "point": "tool",
    "tool": "github__create_issue",
    "args": {"title": "gated"},
    "verdict": "requires_approval",
    "reason": "this one needs a human",
}


async def _store_approval_as_a_dying_run_would(engine: AsyncEngine, turn_id: uuid.UUID) -> uuid.UUID:
    approval_id = uuid.uuid4()
    async with engine.begin() as conn:
        turn = (await conn.execute(select(Turn.tenant_id, Turn.session_id).where(Turn.id == turn_id))).one()
        await conn.execute(
            insert(Approval.__table__).values(
                id=approval_id,
                tenant_id=turn.tenant_id,
                session_id=turn.session_id,
                turn_id=turn_id,
                owner_sub="alice",
                loop=0,
                tool_call_id="call_0_1",
                tool_name="github__create_issue",
                arguments={"title": "gated"},
                arguments_hash=arguments_hash({"title": "gated"}),
                reason=GATED["reason"],
                rule_id=GATED["id"],
                status="pending",
                created_at=utcnow(),
            )  # fmt: skip
        )
    return approval_id


async def test_a_continued_turn_interrupts_on_the_approval_its_lost_run_stored(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    alice: dict[str, str],
    gateway: IdempotentGateway,
    replica_sql: AsyncEngine,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    session = await gateway_session(on_a, alice, batch("held", "gated"), {"text": "both filed"}, policies=[GATED])
    held = Out(gateway, "held")
    follower = start_turn(on_a, alice, session)
    await wait_reached(held.hold, timeout=WAIT_SECONDS)
    stored = await _store_approval_as_a_dying_run_would(replica_sql, uuid.UUID(follower.turn_id))

    await kill(a, follower)
    rest = reconnect(on_b, alice, follower)
    await wait_for(lambda: gateway.effects.sent(held.key) == 2, "B re-sending the call that was out")
    gateway.effects.release(held.title)
    await rest.ended()

    resumed_on_b(follower, rest)
    ended = one_ending(drop_rule(follower.frames + rest.frames))
    assert ended["status"] == "interrupted", ended["error"]
    assert [f.data["approval_id"] for f in rest.of("approval.required")] == [str(stored)]
    pending = (await on_b.get("/approvals", params={"session_id": session["id"]}, headers=alice)).json()["items"]
    assert [(item["id"], item["status"]) for item in pending] == [(str(stored), "pending")]

    approved = await Follower(on_b, "POST", f"/approvals/{stored}", json={"decision": "approve"}, headers=alice).ended()
    final = one_ending(approved.frames)
    assert (final["status"], final["final_output"]) == ("completed", "both filed")
    assert gateway.effects.per_key() == {held.key: 1, await key_in(follower, session, "call_0_1"): 1}
