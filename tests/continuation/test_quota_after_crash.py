"""SIGKILL a replica in the middle of a model call of a tenant with a token quota: the call's
reservation does not stay counted until the period ends. The continuation gives it back when it
takes the turn over, and the ledger ends settled to the turn's usage with nothing reserved."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import QuotaReservation
from tests.conftest import TokenFactory
from tests.continuation.support import deltas, drop_rule, gateway_session, kill_and_reconnect, one_ending, start_turn
from tests.live_server import LiveServer
from tests.turns.support import get_turn
from tests.usage.support import put_limits

pytestmark = pytest.mark.timeout(180)

WORDS = " ".join(f"word{i}" for i in range(40))


async def _quota(client: httpx.AsyncClient, headers: dict[str, str]) -> tuple[int, int]:
    quota = (await client.get("/usage", headers=headers)).json()["quota"]
    return int(quota["used"]), int(quota["reserved"])


async def test_a_replica_killed_in_a_model_call_leaves_no_reservation_counted(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    replica_sql: AsyncEngine,
    tenant: str,
    alice: dict[str, str],
    auth_headers: TokenFactory,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    await put_limits(on_a, auth_headers(tenant, "root", ["admin"]), token_quota={"period": "day", "tokens": 100_000})
    session = await gateway_session(on_a, alice, {"text": WORDS}, delay_ms=100)
    follower = start_turn(on_a, alice, session)
    await follower.until(deltas(3), "text streaming on A")
    assert (await _quota(on_a, alice))[1] > 0  # the streaming call's worst case is reserved

    rest = await kill_and_reconnect(a, follower, on_b, alice)

    assert one_ending(drop_rule(follower.frames + rest.frames))["status"] == "completed"
    usage = (await get_turn(on_b, alice, follower.turn_id))["usage"]
    assert await _quota(on_b, alice) == (usage["input_tokens"] + usage["output_tokens"], 0)
    held = select(func.count()).select_from(QuotaReservation).where(QuotaReservation.tenant_id == tenant)
    async with replica_sql.connect() as conn:
        assert await conn.scalar(held) == 0
