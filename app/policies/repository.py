from __future__ import annotations

import uuid

from app.core.repository import TenantRepository
from app.models import PolicyDecision, TenantPolicy


class TenantPolicyRepository(TenantRepository[TenantPolicy]):
    model = TenantPolicy

    async def latest(self) -> TenantPolicy | None:
        return await self.first(self.readable().order_by(TenantPolicy.version.desc()))


class DecisionRepository(TenantRepository[PolicyDecision]):
    model = PolicyDecision

    async def of_turn(self, turn_id: uuid.UUID) -> list[PolicyDecision]:
        stmt = self.readable().where(PolicyDecision.turn_id == turn_id)
        return await self.all(stmt.order_by(PolicyDecision.created_at, PolicyDecision.id))
