"""Who holds a quota reservation: each one is a row naming its turn, deleted by whoever releases it
first, so a reservation a crash cut off is given back once and never twice (app/runtime/store/quota.py).

The lost run is played here by a reservation taken for a turn that no run settles; the SIGKILL of a
real replica is in tests/continuation/test_quota_after_crash.py.
"""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from app.models import QuotaReservation
from app.runtime.port.journal import QuotaHold, TokenQuota, TurnIdentity
from app.runtime.store.batch import write_rows
from app.runtime.store.quota import QUOTA_LEDGER, LedgerQuota, release_turn, settle_row
from tests.approvals.helpers import gated_config, run_turn
from tests.usage.conftest import Api
from tests.usage.support import ledger, put_limits

QUOTA = TokenQuota("day", 100_000)


async def _interrupted(api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str) -> tuple[TurnIdentity, int]:
    """A turn waiting for a human (no run of it is alive), and the tokens the ledger has used so far."""
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": QUOTA.tokens})
    session, frames = await run_turn(api.client, alice, gated_config())
    ended = frames[-1].data
    assert ended["status"] == "interrupted"
    turn_id = uuid.UUID(frames[0].data["turn_id"])
    ident = TurnIdentity(tenant, uuid.UUID(session["id"]), turn_id, uuid.UUID(session["agent_id"]))
    return ident, ended["usage"]["input_tokens"] + ended["usage"]["output_tokens"]


async def _held(api: Api, turn_id: uuid.UUID) -> int:
    query = select(func.count()).select_from(QuotaReservation).where(QuotaReservation.turn_id == turn_id)
    async with api.app.state.container.engine.connect() as conn:
        return int(await conn.scalar(query) or 0)


async def _lost_hold(api: Api, ident: TurnIdentity, tokens: int) -> QuotaHold:
    hold = await LedgerQuota(api.app.state.container.sql, ident, QUOTA).reserve(tokens)
    assert hold is not None
    return hold


async def test_a_reservation_is_a_row_naming_its_turn_until_it_settles(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    ident, used = await _interrupted(api, admin, alice, tenant)
    assert await _held(api, ident.turn_id) == 0  # the turn's own calls settled theirs

    hold = await _lost_hold(api, ident, 700)
    assert (await _held(api, ident.turn_id), await ledger(api, tenant)) == (1, (used, 700))

    await write_rows(api.app.state.container.sql, [(QUOTA_LEDGER, settle_row(hold, 40))])
    assert (await _held(api, ident.turn_id), await ledger(api, tenant)) == (0, (used + 40, 0))


async def test_cancelling_a_turn_no_run_holds_gives_back_what_its_lost_run_reserved(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    ident, used = await _interrupted(api, admin, alice, tenant)
    await _lost_hold(api, ident, 900)

    response = await api.client.post(f"/turns/{ident.turn_id}/cancel", headers=alice)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    assert (await _held(api, ident.turn_id), await ledger(api, tenant)) == (0, (used, 0))


async def test_a_late_settlement_after_the_release_counts_its_usage_and_frees_nothing_twice(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    """The continuation released the reservation; the lost replica's write still arrives (a partition,
    not a death): its tokens were spent and count, its reservation is not taken off a second time."""
    ident, used = await _interrupted(api, admin, alice, tenant)
    hold = await _lost_hold(api, ident, 500)
    other = await _lost_hold(api, ident, 300)

    sql = api.app.state.container.sql
    async with sql.transaction() as tx:
        assert await release_turn(tx, ident.tenant_id, ident.turn_id) == 800
    assert await ledger(api, tenant) == (used, 0)

    await write_rows(sql, [(QUOTA_LEDGER, settle_row(hold, 60)), (QUOTA_LEDGER, settle_row(other, 25))])
    assert (await _held(api, ident.turn_id), await ledger(api, tenant)) == (0, (used + 85, 0))
