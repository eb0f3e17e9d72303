"""Tenant-wide policies (versioned; the newest version is in force) and decision receipts."""

from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.errors import Conflict, NotFound
from app.governance.canonical import canonical_json, sha256_hex
from app.models import TenantPolicy
from app.policies import schemas
from app.policies.repository import DecisionRepository, TenantPolicyRepository
from app.turns.repository import TurnRepository

EMPTY_HASH = sha256_hex(canonical_json([]))


class PolicyService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.policies = TenantPolicyRepository(db, principal.tenant_id)

    async def current(self) -> schemas.TenantPolicies:
        latest = await self.policies.latest()
        if latest is None:
            return schemas.TenantPolicies(
                version=0, policies=[], policy_hash=EMPTY_HASH, created_by=None, created_at=None
            )
        return _view(latest)

    async def replace(self, body: schemas.TenantPoliciesUpdate) -> schemas.TenantPolicies:
        latest = await self.policies.latest()
        document = body.document()
        row = TenantPolicy(
            id=uuid.uuid4(),
            tenant_id=self.principal.tenant_id,
            version=(latest.version if latest else 0) + 1,
            policies=document,
            policy_hash=sha256_hex(canonical_json(document)),
            created_by=self.principal.sub,
        )
        try:
            await self.policies.add(row)
        except IntegrityError as exc:
            raise Conflict("Policies were changed concurrently; read them again and retry") from exc
        return _view(row)

    async def decisions(self, turn_id: uuid.UUID) -> schemas.DecisionPage:
        if await TurnRepository(self.db, self.principal.tenant_id).get(self.principal, turn_id) is None:
            raise NotFound(f"Turn {turn_id} not found")
        rows = await DecisionRepository(self.db, self.principal.tenant_id).of_turn(turn_id)
        return schemas.DecisionPage(items=[schemas.DecisionReceipt.model_validate(r) for r in rows])


def _view(row: TenantPolicy) -> schemas.TenantPolicies:
    return schemas.TenantPolicies(
        version=row.version,
        policies=row.policies,
        policy_hash=row.policy_hash,
        created_by=row.created_by,
        created_at=row.created_at,
    )
