"""The read a turn makes to find its provider key (a hot-path statement, app/core/sql.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, literal, or_, select

from app.core.sql import Query, Row, Sql
from app.models import Credential, CredentialSetting
from app.models.credential import KEY_FIELDS

_BYOK_ONLY = select(CredentialSetting.byok_only).where(CredentialSetting.tenant_id == bindparam("tenant_id"))
_ANCHOR = select(literal(1).label("one")).subquery("anchor")
TENANT_KEYS = Query(
    select(
        Credential.name,
        Credential.provider,
        Credential.base_url,
        Credential.key_id,
        Credential.sealed_key,
        _BYOK_ONLY.scalar_subquery().label("byok_only"),
    ).select_from(
        _ANCHOR.outerjoin(
            Credential,
            and_(
                Credential.tenant_id == bindparam("tenant_id"),
                or_(Credential.name == bindparam("named"), Credential.name == bindparam("fallback")),
            ),
        )
    )
)
"""The tenant's credentials called `named` or `fallback`, each with the tenant's `byok_only`; one row of
NULL credential columns when it has neither (the outer join keeps the setting)."""


@dataclass(frozen=True, slots=True)
class TenantKeys:
    by_name: dict[str, Row]
    byok_only: bool


async def tenant_keys(sql: Sql, tenant_id: str, named: str | None, fallback: str) -> TenantKeys:
    """The credentials a turn may use and whether the tenant allows only its own keys (one statement)."""
    rows = await sql.fetch(TENANT_KEYS, {"tenant_id": tenant_id, "named": named or fallback, "fallback": fallback})
    return TenantKeys(
        by_name={str(row["name"]): row for row in rows if row["name"] is not None},
        byok_only=any(bool(row["byok_only"]) for row in rows),
    )


def keys_of_arrays(arrays: Mapping[str, Any]) -> TenantKeys:
    """`TenantKeys` from the same read as arrays: one list per field of `KEY_FIELDS` (in one order) and
    `byok_only` (app/runtime/store/read_ahead.py reads them with a turn's session)."""
    names = arrays["name"] or []
    fields = {field: arrays[field] or [] for field in KEY_FIELDS}
    rows = [{field: fields[field][i] for field in KEY_FIELDS} for i in range(len(names))]
    return TenantKeys(by_name={str(r["name"]): r for r in rows}, byok_only=bool(arrays["byok_only"]))
