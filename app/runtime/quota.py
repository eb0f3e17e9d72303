"""The shared token quota: one atomic statement reserves a model call's worst case, one settles it.

A reservation is an upsert on the tenant's row for the current period whose UPDATE only happens
`WHERE used + reserved < quota`: the check and the increment are one statement, so no two replicas
can both read "room left" and both spend it (on PostgreSQL the conflicting row is locked and the
condition re-checked on its newest version; SQLite serialises writers). A call may thus start only
while the period is below its quota, and concurrent calls overspend by at most one reservation.
Settling moves the reservation to `used` as the real usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.core.sql import Query, Sql, bare
from app.models import QuotaLedger
from app.models.base import utcnow

LEDGER: Table = QuotaLedger.__table__  # type: ignore[assignment]


def _reserve(dialect_insert: Any) -> Query:
    ledger = bare(LEDGER)
    statement = dialect_insert(ledger).values(
        tenant_id=bindparam("tenant_id"),
        period_start=bindparam("period_start"),
        used=0,
        reserved=bindparam("amount"),
        updated_at=bindparam("now"),
    )
    statement = statement.on_conflict_do_update(
        index_elements=["tenant_id", "period_start"],
        set_={"reserved": ledger.c.reserved + statement.excluded.reserved, "updated_at": statement.excluded.updated_at},
        where=ledger.c.used + ledger.c.reserved < bindparam("quota"),
    )
    return Query(statement.returning(ledger.c.used, ledger.c.reserved))


RESERVE = {"postgresql": _reserve(pg_insert), "sqlite": _reserve(sqlite_insert)}
SETTLE = Query(
    update(bare(LEDGER))
    .where(
        bare(LEDGER).c.tenant_id == bindparam("tenant_id"),
        bare(LEDGER).c.period_start == bindparam("period_start"),
    )
    .values(
        used=bare(LEDGER).c.used + bindparam("used"),
        reserved=bare(LEDGER).c.reserved - bindparam("reserved"),
        updated_at=bindparam("now"),
    )
)


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one model call holds of its tenant's quota until it settles."""

    tenant_id: str
    period_start: datetime
    tokens: int

    def settle_params(self, used: int) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id, "period_start": self.period_start, "used": used,
            "reserved": self.tokens, "now": utcnow(),
        }  # fmt: skip


async def reserve(sql: Sql, tenant_id: str, period_start: datetime, *, quota: int, tokens: int) -> Reservation | None:
    """Reserve `tokens` if the period is still below `quota`; None when the quota is spent."""
    params = {
        "tenant_id": tenant_id, "period_start": period_start, "amount": tokens, "quota": quota, "now": utcnow(),
    }  # fmt: skip
    row = await sql.fetchrow(RESERVE[sql.dialect], params)
    return None if row is None else Reservation(tenant_id, period_start, tokens)


async def settle(sql: Sql, reservation: Reservation, used: int) -> None:
    await sql.execute(SETTLE, reservation.settle_params(used))
