"""The shared token quota: one atomic statement reserves a model call's worst case; its settlement
rides on the turn's next write.

A reservation is an upsert on the tenant's row for the current period whose UPDATE only happens
`WHERE used + reserved < quota`: the check and the increment are one statement, so no two replicas
can both read "room left" and both spend it (on PostgreSQL the conflicting row is locked and the
condition re-checked on its newest version; SQLite serialises writers). A call may thus start only
while the period is below its quota, and concurrent calls overspend by at most one reservation.

The same statement records who holds the reservation: a `quota_reservations` row naming the turn
(a data-modifying CTE on PostgreSQL, the same transaction on SQLite). Settling moves the
reservation to `used` as the real usage and deletes that row. It is staged like a usage row and
written by the turn's next batched write (app/runtime/store/batch.py: two more data-modifying CTEs
on PostgreSQL), so the quota costs one statement per model call: the reservation.

A replica killed in a model call leaves its reservation behind; the turn's continuation (or the
end of the unowned turn) deletes the turn's rows and gives their tokens back (`release_turn`).
Deleting the row is what releases: only the deleter of a row takes its tokens off `reserved`, so a
reservation is released exactly once, even when a lost replica's late write settles it after the
continuation did. That write's `used` still counts: those tokens were spent.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    String,
    Table,
    Uuid,
    any_,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import Insert

from app.core.sql import Query, Sql, bare
from app.governance.limits import Ceilings
from app.governance.period import period_bounds
from app.models import QuotaLedger, QuotaReservation
from app.models.base import utcnow
from app.runtime.port.journal import QuotaHold, TokenQuota, TurnIdentity

QUOTA_LEDGER: Table = QuotaLedger.__table__  # type: ignore[assignment]
RESERVATIONS: Table = QuotaReservation.__table__  # type: ignore[assignment]
SETTLE_KEYS = ("tenant_id", "period_start")
SETTLE_COLUMNS = ("hold_id", "tenant_id", "period_start", "used", "reserved")
_LEDGER = bare(QUOTA_LEDGER)
_HELD = bare(RESERVATIONS)
_WHEN = DateTime(timezone=True)
_HOLD = {
    "id": bindparam("hold_id", type_=Uuid()),
    "tenant_id": bindparam("tenant_id", type_=String()),
    "turn_id": bindparam("turn_id", type_=Uuid()),
    "period_start": bindparam("period_start", type_=_WHEN),
    "tokens": bindparam("amount", type_=BigInteger()),
    "created_at": bindparam("now", type_=_WHEN),
}


def _reserve(dialect_insert: Any) -> Insert:
    statement = dialect_insert(_LEDGER).values(
        tenant_id=_HOLD["tenant_id"], period_start=_HOLD["period_start"], used=0, reserved=_HOLD["tokens"],
        updated_at=_HOLD["created_at"],
    )  # fmt: skip
    statement = statement.on_conflict_do_update(
        index_elements=list(SETTLE_KEYS),
        set_={
            "reserved": _LEDGER.c.reserved + statement.excluded.reserved,
            "updated_at": statement.excluded.updated_at,
        },
        where=_LEDGER.c.used + _LEDGER.c.reserved < bindparam("quota", type_=BigInteger()),
    )
    returning: Insert = statement.returning(_LEDGER.c.reserved)
    return returning


def _reserve_and_hold() -> Query:
    """PostgreSQL: the reservation and its row in one statement (the row only if it reserved)."""
    reserved = _reserve(pg_insert).cte("reserved")
    values: list[Any] = list(_HOLD.values())
    held = insert(_HELD).from_select(list(_HOLD), select(*values).where(exists(select(reserved)))).cte("held")
    return Query(select(reserved.c.reserved).add_cte(held))


RESERVE_AND_HOLD = _reserve_and_hold()
RESERVE = Query(_reserve(sqlite_insert))
HOLD = Query(insert(_HELD).values(_HOLD))
"""SQLite: the reservation, then its row, in one transaction."""
SETTLE_ONE = Query(
    update(_LEDGER)
    .where(_LEDGER.c.tenant_id == bindparam("s_tenant_id"), _LEDGER.c.period_start == bindparam("s_period_start"))
    .values(used=_LEDGER.c.used + bindparam("s_used"), reserved=_LEDGER.c.reserved - bindparam("s_reserved"))
)
RELEASE_ONE = Query(delete(_HELD).where(_HELD.c.id == bindparam("hold_id", type_=Uuid())).returning(_HELD.c.id))
RELEASE_TURN = Query(
    delete(_HELD)
    .where(_HELD.c.tenant_id == bindparam("tenant_id"), _HELD.c.turn_id == bindparam("turn_id", type_=Uuid()))
    .returning(_HELD.c.tenant_id, _HELD.c.period_start, _HELD.c.tokens)
)


def token_quota_of(ceilings: Ceilings) -> TokenQuota | None:
    if ceilings.quota_period is None or ceilings.quota_tokens is None:
        return None
    return TokenQuota(ceilings.quota_period, ceilings.quota_tokens)


class LedgerQuota:
    """The `QuotaGate` of one turn: reservations on the tenant's row of the current period, held by the turn."""

    def __init__(self, sql: Sql, ident: TurnIdentity, quota: TokenQuota) -> None:
        self._sql = sql
        self._tenant_id = ident.tenant_id
        self._turn_id = ident.turn_id
        self._quota = quota

    async def reserve(self, tokens: int) -> QuotaHold | None:
        now = utcnow()
        hold = QuotaHold(self._tenant_id, period_bounds(self._quota.period, now)[0], tokens, uuid.uuid4())
        params = {
            "hold_id": hold.id, "tenant_id": hold.tenant_id, "turn_id": self._turn_id,
            "period_start": hold.period_start, "amount": tokens, "quota": self._quota.tokens, "now": now,
        }  # fmt: skip
        if self._sql.dialect == "postgresql":
            reserved = await self._sql.fetchrow(RESERVE_AND_HOLD, params)
        else:
            async with self._sql.transaction() as tx:
                if (reserved := await tx.fetchrow(RESERVE, params)) is not None:
                    await tx.execute(HOLD, params)
        return None if reserved is None else hold


def settle_row(hold: QuotaHold, used: int) -> dict[str, Any]:
    """A staged settlement: `used` tokens become used, the hold's reservation is released."""
    return {
        "hold_id": hold.id, "tenant_id": hold.tenant_id, "period_start": hold.period_start, "used": used,
        "reserved": hold.tokens,
    }  # fmt: skip


def _settlements(prefix: str) -> Any:
    kinds: dict[str, Any] = {
        "hold_id": Uuid(), "tenant_id": String(), "period_start": _WHEN, "used": BigInteger(), "reserved": BigInteger()
    }  # fmt: skip
    arrays = [bindparam(f"{prefix}{c}", type_=ARRAY(kinds[c])) for c in SETTLE_COLUMNS]
    return func.unnest(*arrays).table_valued(*SETTLE_COLUMNS).render_derived()


def settle_ctes(prefix: str) -> list[Any]:
    """PostgreSQL: every settlement of a write as two data-modifying CTEs: delete the holds' rows, then
    one UPDATE … FROM the settlements summed per ledger row (an UPDATE may change a row only once),
    releasing only the reservations whose rows this statement deleted."""
    released = (
        delete(_HELD)
        .where(_HELD.c.id == any_(bindparam(f"{prefix}hold_id", type_=ARRAY(Uuid()))))
        .returning(_HELD.c.id)
        .cte("quota_released")
    )
    rows = _settlements(prefix)
    freed = case((rows.c.hold_id.in_(select(released.c.id)), rows.c.reserved), else_=0)
    sums = (
        select(
            rows.c.tenant_id,
            rows.c.period_start,
            func.sum(rows.c.used).cast(BigInteger()).label("used"),
            func.sum(freed).cast(BigInteger()).label("reserved"),
        )
        .group_by(rows.c.tenant_id, rows.c.period_start)
        .subquery("settled_quota")
    )
    ledger = (
        update(_LEDGER)
        .where(_LEDGER.c.tenant_id == sums.c.tenant_id, _LEDGER.c.period_start == sums.c.period_start)
        .values(used=_LEDGER.c.used + sums.c.used, reserved=_LEDGER.c.reserved - sums.c.reserved)
    )
    return [released, ledger.cte("quota")]


def settle_params(prefix: str, rows: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    return {f"{prefix}{c}": [row[c] for row in rows] for c in SETTLE_COLUMNS}


def _settle_one(row: dict[str, Any], *, released: bool) -> dict[str, Any]:
    return {
        "s_tenant_id": row["tenant_id"], "s_period_start": row["period_start"], "s_used": row["used"],
        "s_reserved": row["reserved"] if released else 0,
    }  # fmt: skip


async def settle_each(sql: Sql, rows: Sequence[dict[str, Any]]) -> None:
    """Any backend: each settlement as a delete of its hold and one UPDATE (inside the write's transaction)."""
    for row in rows:
        released = await sql.fetchrow(RELEASE_ONE, {"hold_id": row["hold_id"]}) is not None
        await sql.execute(SETTLE_ONE, _settle_one(row, released=released))


async def release_turn(sql: Sql, tenant_id: str, turn_id: uuid.UUID) -> int:
    """Give back the reservations the turn still holds (its run was lost in a model call); the tokens
    released. Run it in the transaction that takes the turn over or ends it."""
    rows = await sql.fetch(RELEASE_TURN, {"tenant_id": tenant_id, "turn_id": turn_id})
    for row in rows:
        held = {**row, "used": 0, "reserved": row["tokens"]}
        await sql.execute(SETTLE_ONE, _settle_one(held, released=True))
    return sum(int(row["tokens"]) for row in rows)
