from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, get_args

from fastapi import APIRouter, Query
from pydantic import BeforeValidator

from app.core.problems import problem_responses
from app.deps import AdminPrincipal, CurrentPrincipal, SessionDep
from app.errors import InvalidInput
from app.usage import schemas
from app.usage.service import LimitsService, UsageService

router = APIRouter(tags=["usage"], responses=problem_responses(401, 422))
GROUP_KEYS = get_args(schemas.GroupKey)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_only(value: object) -> object:
    """Dates as ISO 8601 only: pydantic would also read a bare number as seconds since 1970."""
    if isinstance(value, str) and not _ISO_DATE.match(value):
        raise ValueError("expected an ISO 8601 date or date-time, e.g. 2026-11-01T00:00:00Z")
    return value


IsoDateTime = Annotated[datetime, BeforeValidator(_iso_only)]


@router.get("/limits", operation_id="getLimits", response_model=schemas.TenantCeilings)
async def get_limits(db: SessionDep, principal: CurrentPrincipal) -> schemas.TenantCeilings:
    """The tenant's ceilings (null: no ceiling)."""
    return await LimitsService(db, principal).current()


@router.put(
    "/limits",
    operation_id="replaceLimits",
    response_model=schemas.TenantCeilings,
    responses=problem_responses(403, 409),
)
async def put_limits(
    body: schemas.TenantCeilingsUpdate, db: SessionDep, principal: AdminPrincipal
) -> schemas.TenantCeilings:
    """Replace the tenant's ceilings (role admin). Refused with 422 `ceiling_below_agent_limit` while an
    active agent sets a limit above a new ceiling; everything else is clamped at run time."""
    return await LimitsService(db, principal).replace(body)


@router.get("/usage", operation_id="getUsage", response_model=schemas.UsageReport, response_model_by_alias=True)
async def get_usage(
    db: SessionDep,
    principal: CurrentPrincipal,
    from_: Annotated[
        IsoDateTime | None, Query(alias="from", description="Start (inclusive); default: this month")
    ] = None,
    to: Annotated[IsoDateTime | None, Query(description="End (exclusive); default: now")] = None,
    group_by: Annotated[str, Query(description="Comma-separated: day, agent, model, user, channel")] = "",
) -> schemas.UsageReport:
    """Token totals of the tenant (admin) or of the caller's own sessions, with the quota used and left."""
    keys = [k.strip() for k in group_by.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        names = ", ".join(unknown)
        raise InvalidInput(f"unknown group_by key(s) {names}: use {', '.join(GROUP_KEYS)}", field="query.group_by")
    return await UsageService(db, principal).report(start=from_, end=to, group_by=list(dict.fromkeys(keys)))
