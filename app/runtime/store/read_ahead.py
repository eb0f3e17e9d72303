"""What a run's session read brings along: the reads its start would make next anyway, as columns of
that one statement (`TurnStore.session_for_turn`), fresh as of it.

- `tenant_rules`: the tenant's newest policy rules as stored, for the run's first decision (its
  gate; every later decision reads them again, app/governance/gate.py).
- PostgreSQL only, `keys_*`: the tenant's credentials the session's model may use (the agent's named
  one and the one named after its provider) as one array per field in name order, and `byok_only`:
  the read of app/credentials/store.py `TENANT_KEYS`, for the run's first model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.dialects.postgresql import aggregate_order_by

from app.models import Credential, CredentialSetting, Session, TenantPolicy
from app.models.credential import KEY_FIELDS
from app.runtime.port.journal import StartReads

TENANT_RULES = (
    select(TenantPolicy.policies)
    .where(TenantPolicy.tenant_id == Session.tenant_id)
    .order_by(TenantPolicy.version.desc())
    .limit(1)
    .scalar_subquery()
    .label("tenant_rules")
)
_MODEL = Session.snapshot["model"]
_KEYS_OF_THE_MODEL = (
    Credential.tenant_id == Session.tenant_id,
    or_(Credential.name == _MODEL["credential"].as_string(), Credential.name == _MODEL["provider"].as_string()),
)


def _keys_column(field: str) -> ColumnElement[Any]:
    column = Credential.__table__.c[field]
    aggregated = func.array_agg(aggregate_order_by(column, Credential.name))
    return select(aggregated).where(*_KEYS_OF_THE_MODEL).scalar_subquery().label(f"keys_{field}")


KEY_COLUMNS = [
    *(_keys_column(field) for field in KEY_FIELDS),
    select(CredentialSetting.byok_only)
    .where(CredentialSetting.tenant_id == Session.tenant_id)
    .scalar_subquery()
    .label("keys_byok_only"),
]


def start_reads_of(session: Mapping[str, Any]) -> StartReads | None:
    """What a session read for a run brought along; None for a row that carries none of it."""
    if "tenant_rules" not in session:
        return None
    keys = None
    if "keys_name" in session:
        keys = {field: session[f"keys_{field}"] for field in (*KEY_FIELDS, "byok_only")}
    return StartReads(session["tenant_rules"], keys)
