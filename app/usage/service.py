"""Tenant ceilings (`/limits`) and usage totals (`/usage`)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.errors import Conflict, InvalidInput, RuleViolation
from app.governance.limits import Ceilings, excesses
from app.governance.period import period_bounds
from app.models import TenantLimits
from app.models.base import utcnow
from app.usage import schemas
from app.usage.repository import LimitsRepository, UsageRepository

MAX_RANGE = timedelta(days=366)


class LimitsService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.principal = principal
        self.limits = LimitsRepository(db, principal.tenant_id)

    async def ceilings(self) -> Ceilings:
        row = await self.limits.get()
        return Ceilings() if row is None else _ceilings(row)

    async def current(self) -> schemas.TenantCeilings:
        row = await self.limits.get()
        return schemas.TenantCeilings() if row is None else _view(row)

    async def replace(self, body: schemas.TenantCeilingsUpdate) -> schemas.TenantCeilings:
        """Replace the ceilings; refused (nothing changed) while an active agent sets a limit above one.

        Agents that leave a limit unset, sessions pinned to older agent versions and turn requests
        are not refused: the lowered ceiling applies to their turns at run time.
        """
        ceilings = Ceilings(
            max_loops=body.max_loops,
            max_output_tokens=body.max_output_tokens,
            max_total_tokens=body.max_total_tokens,
        )
        over = []
        for agent in await self.limits.active_agent_limits():
            over += [
                {"agent_id": str(agent.id), "name": agent.name, **dataclasses.asdict(e)}
                for e in excesses(ceilings, agent.config.get("limits") or {})
            ]
        if over:
            fields = ", ".join(sorted({o["field"] for o in over}))
            raise RuleViolation(
                "ceiling_below_agent_limit",
                f"{len(over)} agent limit(s) exceed the new ceiling ({fields}): lower them first",
                agents=over,
            )
        row = await self.limits.get(for_update=True)
        if row is None:
            try:
                row = await self.limits.add(
                    TenantLimits(tenant_id=self.principal.tenant_id, updated_by=self.principal.sub)
                )
            except IntegrityError as exc:
                raise Conflict("The limits were changed concurrently; read them again and retry") from exc
        row.max_loops, row.max_output_tokens = body.max_loops, body.max_output_tokens
        row.max_total_tokens, row.max_concurrent_turns = body.max_total_tokens, body.max_concurrent_turns
        row.quota_period = body.token_quota.period if body.token_quota else None
        row.quota_tokens = body.token_quota.tokens if body.token_quota else None
        row.updated_by, row.updated_at = self.principal.sub, utcnow()
        await self.limits.session.flush()
        return _view(row)

    async def quota(self, now: datetime) -> schemas.QuotaState | None:
        row = await self.limits.get()
        if row is None or row.quota_period is None or row.quota_tokens is None:
            return None
        start, end = period_bounds(row.quota_period, now)
        ledger = await self.limits.ledger(start)
        used, reserved = (ledger.used, ledger.reserved) if ledger else (0, 0)
        return schemas.QuotaState(
            period=row.quota_period,  # type: ignore[arg-type]
            tokens=row.quota_tokens,
            period_start=start,
            period_end=end,
            used=used,
            reserved=reserved,
            left=max(0, row.quota_tokens - used - reserved),
        )


class UsageService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal

    async def report(self, *, start: datetime | None, end: datetime | None, group_by: list[str]) -> schemas.UsageReport:
        now = utcnow()
        end = _utc(end) if end is not None else now
        start = _utc(start) if start is not None else period_bounds("month", end)[0]
        if start > end:
            raise InvalidInput("`from` must not be after `to`", field="query.from")
        if end - start > MAX_RANGE:
            raise InvalidInput("the range from `from` to `to` must not exceed 366 days", field="query.to")
        rows = await UsageRepository(self.db, self.principal.tenant_id).totals(
            start=start, end=end, owner_sub=self.principal.owner_filter, group_by=group_by
        )
        items = [_group(row._mapping, group_by) for row in rows]
        totals = schemas.UsageTotals(
            input_tokens=sum(i.input_tokens for i in items),
            output_tokens=sum(i.output_tokens for i in items),
            total_tokens=sum(i.total_tokens for i in items),
            calls=sum(i.calls for i in items),
        )
        return schemas.UsageReport(
            from_=start,
            to=end,
            group_by=group_by,  # type: ignore[arg-type]
            scope="tenant" if self.principal.is_admin else "own",
            totals=totals,
            items=items if group_by else [],
            quota=await LimitsService(self.db, self.principal).quota(now),
        )


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _group(row: Any, group_by: list[str]) -> schemas.UsageGroup:
    input_tokens, output_tokens = int(row["input_tokens"]), int(row["output_tokens"])
    keys: dict[str, Any] = {("agent_id" if k == "agent" else k): row[k] for k in group_by}
    if isinstance(keys.get("day"), str):
        keys["day"] = datetime.fromisoformat(keys["day"]).date()
    return schemas.UsageGroup(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        calls=int(row["calls"]),
        **keys,
    )


def _ceilings(row: TenantLimits) -> Ceilings:
    return Ceilings(
        max_loops=row.max_loops,
        max_output_tokens=row.max_output_tokens,
        max_total_tokens=row.max_total_tokens,
        max_concurrent_turns=row.max_concurrent_turns,
        quota_period=row.quota_period,
        quota_tokens=row.quota_tokens,
    )


def _view(row: TenantLimits) -> schemas.TenantCeilings:
    quota = None
    if row.quota_period is not None and row.quota_tokens is not None:
        quota = schemas.TokenQuota(period=row.quota_period, tokens=row.quota_tokens)  # type: ignore[arg-type]
    return schemas.TenantCeilings(
        max_loops=row.max_loops,
        max_output_tokens=row.max_output_tokens,
        max_total_tokens=row.max_total_tokens,
        max_concurrent_turns=row.max_concurrent_turns,
        token_quota=quota,
        updated_by=row.updated_by,
        updated_at=row.updated_at,
    )
