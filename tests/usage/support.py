"""Helpers of the usage tests: set the tenant's limits, read the quota ledger, read a problem."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
from sqlalchemy import select

from app.governance.period import period_bounds
from app.models import QuotaLedger

if TYPE_CHECKING:
    from tests.usage.conftest import Api


async def put_limits(client: httpx.AsyncClient, admin: dict[str, str], **limits: Any) -> dict[str, Any]:
    response = await client.put("/limits", json=limits, headers=admin)
    assert response.status_code == 200, response.text
    return dict(response.json())


def problem(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = dict(response.json())
    if code is not None:
        assert body["code"] == code
        assert body["type"].endswith("/" + code.replace("_", "-"))
    return body


async def ledger(api: Api, tenant: str) -> tuple[int, int]:
    start = period_bounds("day", datetime.now(UTC))[0]
    async with api.app.state.container.engine.connect() as conn:
        row = (
            await conn.execute(
                select(QuotaLedger.used, QuotaLedger.reserved).where(
                    QuotaLedger.tenant_id == tenant, QuotaLedger.period_start == start
                )
            )
        ).one()
    return int(row.used), int(row.reserved)
