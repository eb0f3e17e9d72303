"""The shared token quota: one atomic statement reserves a model call's worst case; its settlement
rides on the turn's next write.

A reservation is an upsert on the tenant's row for the current period whose UPDATE only happens
`WHERE used + reserved < quota`: the check and the increment are one statement, so no two replicas
can both read "room left" and both spend it (on PostgreSQL the conflicting row is locked and the
condition re-checked on its newest version; SQLite serialises writers). A call may thus start only
while the period is below its quota, and concurrent calls overspend by at most one reservation.

Settling moves the reservation to `used` as the real usage. It is staged like a usage row and
written by the turn's next batched write (app/runtime/store/batch.py: one more data-modifying CTE on
PostgreSQL), so the quota costs one statement per model call: the reservation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, String, Table, bindparam, func, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import Update

from app.core.sql import Query, Sql, bare
from app.governance.limits import Ceilings
from app.governance.period import period_bounds
from app.models import QuotaLedger
from app.models.base import utcnow
from app.runtime.port.journal import QuotaHold, TokenQuota

QUOTA_LEDGER: Table = QuotaLedger.__table__  # type: ignore[assignment]
SETTLE_KEYS = ("tenant_id", "period_start")


def _reserve(dialect_insert: Any) -> Query:
    ledger = bare(QUOTA_LEDGER)
    statement = dialect_insert(ledger).values(
        tenant_id=bindparam("tenant_id"),
        period_start=bindparam("period_start"),
        used=0,
        reserved=bindparam("amount"),
        updated_at=bindparam("now"),
    )
    statement = statement.on_conflict_do_update(
        index_elements=list(SETTLE_KEYS),
        set_={"reserved": ledger.c.reserved + statement.excluded.reserved, "updated_at": statement.excluded.updated_at},
        where=ledger.c.used + ledger.c.reserved < bindparam("quota"),
    )
    return Query(statement.returning(ledger.c.reserved))


RESERVE = {"postgresql": _reserve(pg_insert), "sqlite": _reserve(sqlite_insert)}
_LEDGER = bare(QUOTA_LEDGER)
SETTLE_ONE = Query(
    update(_LEDGER)
    .where(_LEDGER.c.tenant_id == bindparam("s_tenant_id"), _LEDGER.c.period_start == bindparam("s_period_start"))
    .values(used=_LEDGER.c.used + bindparam("s_used"), reserved=_LEDGER.c.reserved - bindparam("s_reserved"))
)


def token_quota_of(ceilings: Ceilings) -> TokenQuota | None:
    if ceilings.quota_period is None or ceilings.quota_tokens is None:
        return None
    return TokenQuota(ceilings.quota_period, ceilings.quota_tokens)


class LedgerQuota:
    """The `QuotaGate` of one turn: reservations on the tenant's row of the current period."""

    def __init__(self, sql: Sql, tenant_id: str, quota: TokenQuota) -> None:
        self._sql = sql
        self._tenant_id = tenant_id
        self._quota = quota

    async def reserve(self, tokens: int) -> QuotaHold | None:
        now = utcnow()
        start = period_bounds(self._quota.period, now)[0]
        params = {
            "tenant_id": self._tenant_id, "period_start": start, "amount": tokens, "quota": self._quota.tokens,
            "now": now,
        }  # fmt: skip
        if await self._sql.fetchrow(RESERVE[self._sql.dialect], params) is None:
            return None
        return QuotaHold(self._tenant_id, start, tokens)


def settle_row(hold: QuotaHold, used: int) -> dict[str, Any]:
    """A staged settlement: `used` tokens become used, the hold's reservation is released."""
    return {"tenant_id": hold.tenant_id, "period_start": hold.period_start, "used": used, "reserved": hold.tokens}


def merged(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Settlements of one write, summed per ledger row (an UPDATE may change a row only once)."""
    totals: dict[tuple[str, datetime], dict[str, Any]] = {}
    for row in rows:
        key = (row["tenant_id"], row["period_start"])
        total = totals.setdefault(key, {"tenant_id": key[0], "period_start": key[1], "used": 0, "reserved": 0})
        total["used"] += row["used"]
        total["reserved"] += row["reserved"]
    return list(totals.values())


def settle_update(prefix: str) -> Update:
    """PostgreSQL: every merged settlement of a write in one UPDATE … FROM unnest (for a CTE)."""
    arrays = [
        bindparam(f"{prefix}tenant_id", type_=ARRAY(String())),
        bindparam(f"{prefix}period_start", type_=ARRAY(DateTime(timezone=True))),
        bindparam(f"{prefix}used", type_=ARRAY(BigInteger())),
        bindparam(f"{prefix}reserved", type_=ARRAY(BigInteger())),
    ]
    deltas = func.unnest(*arrays).table_valued("tenant_id", "period_start", "used", "reserved").render_derived()
    return (
        update(_LEDGER)
        .where(_LEDGER.c.tenant_id == deltas.c.tenant_id, _LEDGER.c.period_start == deltas.c.period_start)
        .values(used=_LEDGER.c.used + deltas.c.used, reserved=_LEDGER.c.reserved - deltas.c.reserved)
    )


def settle_params(prefix: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {f"{prefix}{c}": [row[c] for row in rows] for c in ("tenant_id", "period_start", "used", "reserved")}


async def settle_each(sql: Sql, rows: list[dict[str, Any]]) -> None:
    """Any backend: the merged settlements as one UPDATE each (inside the write's transaction)."""
    for row in rows:
        await sql.execute(SETTLE_ONE, {f"s_{c}": v for c, v in row.items()})
