"""The read a policy decision makes of the tenant's rules (a hot-path statement, app/core/sql.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from app.core.sql import Query, Sql
from app.models import TenantPolicy

NEWEST_TENANT_POLICIES = Query(
    select(TenantPolicy.policies)
    .where(TenantPolicy.tenant_id == bindparam("tenant_id"))
    .order_by(TenantPolicy.version.desc())
    .limit(1)
)


async def newest_tenant_policies(sql: Sql, tenant_id: str) -> Any:
    """The rules of the tenant's newest policy version as stored, or None: one statement, no transaction."""
    return await sql.fetchval(NEWEST_TENANT_POLICIES, {"tenant_id": tenant_id})
