from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, func, select

from app.core.repository import TenantRepository
from app.models import Agent, AgentVersion, QuotaLedger, Session, TenantLimits, Turn, Usage


class LimitsRepository(TenantRepository[TenantLimits]):
    model = TenantLimits

    async def get(self, *, for_update: bool = False) -> TenantLimits | None:
        stmt = self.readable()
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def active_agent_limits(self) -> list[Row[Any]]:
        """`id`, `name` and the current version's config `limits` of every active agent of the tenant."""
        stmt = (
            select(Agent.id, Agent.name, AgentVersion.config)
            .join(AgentVersion, (AgentVersion.agent_id == Agent.id) & (AgentVersion.version == Agent.current_version))
            .where(Agent.tenant_id == self.tenant_id, Agent.archived_at.is_(None))
        )
        return list((await self.session.execute(stmt)).all())  # type: ignore[arg-type]

    async def ledger(self, period_start: datetime) -> QuotaLedger | None:
        stmt = select(QuotaLedger).where(
            QuotaLedger.tenant_id == self.tenant_id, QuotaLedger.period_start == period_start
        )
        found: QuotaLedger | None = (await self.session.execute(stmt)).scalars().first()
        return found


class UsageRepository(TenantRepository[Usage]):
    model = Usage

    def _day(self) -> ColumnElement[Any]:
        if self.session.get_bind().dialect.name == "postgresql":
            return func.date(func.timezone("UTC", Usage.created_at))
        return func.date(Usage.created_at)

    def _keys(self) -> dict[str, Any]:
        return {
            "day": self._day(), "agent": Usage.agent_id, "model": Usage.model, "user": Session.owner_sub,
            "channel": Turn.channel,
        }  # fmt: skip

    async def totals(
        self, *, start: datetime, end: datetime, owner_sub: str | None, group_by: list[str]
    ) -> list[Row[Any]]:
        """Sums of the tenant's usage in [start, end), by the given keys (each row labelled by key);
        only the sessions of `owner_sub` unless None."""
        keys = [self._keys()[k].label(k) for k in group_by]
        stmt = (
            select(
                *keys,
                func.coalesce(func.sum(Usage.input_tokens), 0).label("input_tokens"),
                func.coalesce(func.sum(Usage.output_tokens), 0).label("output_tokens"),
                func.count(Usage.id).label("calls"),
            )
            .join(Session, (Session.id == Usage.session_id) & (Session.tenant_id == self.tenant_id))
            .where(Usage.tenant_id == self.tenant_id, Usage.created_at >= start, Usage.created_at < end)
        )
        if owner_sub is not None:
            stmt = stmt.where(Session.owner_sub == owner_sub)
        if "channel" in group_by:
            stmt = stmt.join(Turn, (Turn.id == Usage.turn_id) & (Turn.tenant_id == self.tenant_id))
        if keys:
            stmt = stmt.group_by(*keys).order_by(*keys)
        return list((await self.session.execute(stmt)).all())  # type: ignore[arg-type]
