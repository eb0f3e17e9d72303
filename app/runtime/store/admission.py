"""Whether a new turn may start: the tenant's quota and its concurrent-turn ceiling.

Both are answered by statements the turn start runs anyway, so admission costs no extra round trip:
the session read also returns the tenant's ceilings and the period's quota usage
(`with_tenant_admission`), and the turn's INSERT takes one of the tenant's `max_concurrent_turns`
slots (`slotted_turn_insert`).

Slots: a running turn holds a number in [0, max_concurrent_turns), and a partial unique index on
(tenant_id, concurrency_slot) over running turns makes two of them holding the same number
impossible, on every replica. The INSERT picks the first free number after a random offset (so
concurrent starters rarely pick the same one) and inserts nothing when none is free. A slot frees
itself when the turn leaves `running`: nothing to release, nothing to drift after a crash.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, and_, bindparam, case, exists, func, insert, literal, literal_column, select
from sqlalchemy.sql.dml import Insert

from app.core.sql import bare
from app.errors import TooManyRequests
from app.governance.limits import Ceilings
from app.governance.period import period_bounds, period_starts, seconds_until
from app.models import QuotaLedger, Session, TenantLimits

CEILING_PREFIX = "ceiling_"
SLOT_INDEX = "uq_turns_running_slot"
SLOT_ATTEMPTS = 4
"""Concurrent starters that picked the same free slot: the losers pick again, this often at most."""
TOO_MANY_TURNS_RETRY_SECONDS = 5
_CEILING_COLUMNS = (
    TenantLimits.max_loops, TenantLimits.max_output_tokens, TenantLimits.max_total_tokens,
    TenantLimits.max_concurrent_turns, TenantLimits.quota_period, TenantLimits.quota_tokens,
)  # fmt: skip


def with_tenant_admission(statement: Select[Any]) -> Select[Any]:
    """Add the tenant's ceilings (`ceiling_*`) and the current period's `quota_used` to a read of a session.

    Parameters: `day_start` and `month_start`, the current period starts (`admission_params`).
    """
    period_start = case(
        (TenantLimits.quota_period == "day", bindparam("day_start", type_=QuotaLedger.period_start.type)),
        else_=bindparam("month_start", type_=QuotaLedger.period_start.type),
    )
    return (
        statement.add_columns(*(c.label(CEILING_PREFIX + c.key) for c in _CEILING_COLUMNS))
        .add_columns(QuotaLedger.used.label("quota_used"))
        .outerjoin(TenantLimits, TenantLimits.tenant_id == Session.tenant_id)
        .outerjoin(
            QuotaLedger, and_(QuotaLedger.tenant_id == Session.tenant_id, QuotaLedger.period_start == period_start)
        )
    )


def admission_params(now: datetime) -> dict[str, datetime]:
    starts = period_starts(now)
    return {"day_start": starts["day"], "month_start": starts["month"]}


@dataclass(frozen=True, slots=True)
class Admission:
    ceilings: Ceilings
    quota_used: int

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Admission:
        ceilings = {c.key: row[CEILING_PREFIX + c.key] for c in _CEILING_COLUMNS}
        return cls(Ceilings.of(ceilings), int(row["quota_used"] or 0))

    def check_quota(self, now: datetime) -> None:
        """429 `quota_exceeded` once the period's settled usage has reached the quota."""
        period, tokens = self.ceilings.quota_period, self.ceilings.quota_tokens
        if period is None or tokens is None or self.quota_used < tokens:
            return
        end = period_bounds(period, now)[1]
        raise TooManyRequests(
            "quota_exceeded",
            f"The tenant's token quota for this {period} is spent ({self.quota_used} of {tokens} tokens)",
            retry_after=seconds_until(end, now),
        )


class NoFreeSlot(Exception):
    """The tenant already runs `max_concurrent_turns` turns: the turn was not inserted."""

    def __init__(self, ceiling: int | None) -> None:
        super().__init__(f"all {ceiling} concurrency slots are taken")
        self.ceiling = ceiling


def too_many_turns(ceiling: int) -> TooManyRequests:
    return TooManyRequests(
        "too_many_turns",
        f"The tenant already runs its maximum of {ceiling} concurrent turns",
        retry_after=TOO_MANY_TURNS_RETRY_SECONDS,
    )


def free_slot(turns: Table, tenant_param: str) -> Any:
    """A subquery of one free slot number of the tenant named by `tenant_param`, or no row.

    Slots held count too, not only the numbers below the ceiling: a ceiling lowered while turns run
    leaves some holding numbers above it.

    Parameters: `max_concurrent` and `slot_offset` (`slot_params`).
    """
    running, holders = bare(turns).alias("running"), bare(turns).alias("holders")
    held = (
        select(func.count())
        .where(
            holders.c.tenant_id == bindparam(tenant_param),
            holders.c.status == literal_column("'running'"),
            holders.c.concurrency_slot.is_not(None),
        )
        .scalar_subquery()
    )
    candidate = select(literal(0).label("n")).cte("slot_candidates", recursive=True)
    candidate = candidate.union_all(select(candidate.c.n + 1).where(candidate.c.n + 1 < bindparam("max_concurrent")))
    slot = (candidate.c.n + bindparam("slot_offset")) % bindparam("max_concurrent")
    taken = exists().where(
        running.c.tenant_id == bindparam(tenant_param),
        running.c.status == literal_column("'running'"),  # a literal: the partial index must match it
        running.c.concurrency_slot == slot,
    )
    return select(slot.label("slot")).where(~taken, held < bindparam("max_concurrent")).limit(1).subquery("free_slot")


def slotted_turn_insert(turns: Table, columns: tuple[str, ...]) -> Insert:
    """INSERT of one turn (parameters named after `columns`) holding a free slot, or of nothing.

    Parameters besides the columns: `max_concurrent` and `slot_offset` (`slot_params`).
    """
    table = bare(turns)
    free = free_slot(turns, "tenant_id")
    values = [bindparam(c, type_=table.c[c].type) for c in columns]
    return insert(table).from_select([*columns, "concurrency_slot"], select(*values, free.c.slot))


def slot_params(max_concurrent: int) -> dict[str, int]:
    return {"max_concurrent": max_concurrent, "slot_offset": random.randrange(max_concurrent)}
