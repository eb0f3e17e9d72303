"""The reads a turn makes to find its provider key (hot-path statements, app/core/sql.py)."""

from __future__ import annotations

from sqlalchemy import bindparam, or_, select

from app.core.sql import Query, Row, Sql
from app.models import Credential, CredentialSetting

CREDENTIALS_BY_NAME = Query(
    select(Credential.name, Credential.provider, Credential.base_url, Credential.key_id, Credential.sealed_key).where(
        Credential.tenant_id == bindparam("tenant_id"),
        or_(Credential.name == bindparam("named"), Credential.name == bindparam("fallback")),
    )
)
BYOK_ONLY = Query(select(CredentialSetting.byok_only).where(CredentialSetting.tenant_id == bindparam("tenant_id")))


async def credentials_named(sql: Sql, tenant_id: str, named: str | None, fallback: str) -> dict[str, Row]:
    """The tenant's credentials called `named` or `fallback`, by name (one statement)."""
    rows = await sql.fetch(
        CREDENTIALS_BY_NAME, {"tenant_id": tenant_id, "named": named or fallback, "fallback": fallback}
    )
    return {str(row["name"]): row for row in rows}


async def byok_only(sql: Sql, tenant_id: str) -> bool:
    return bool(await sql.fetchval(BYOK_ONLY, {"tenant_id": tenant_id}))
