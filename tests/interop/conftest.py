"""Both doors are driven by real clients over a socket: the service under uvicorn, on each backend."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.auth.verify import mint_user_token
from app.settings import Settings
from tests.conftest import TEST_SECRET, make_settings
from tests.turns.loopback import serve_on_loopback


@pytest.fixture(params=["postgresql", "sqlite"])
async def base_url(request: pytest.FixtureRequest, settings: Settings, tmp_path: Path) -> AsyncIterator[str]:
    chosen = (
        settings
        if request.param == "postgresql"
        else make_settings(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", tmp_path)
    )
    async with serve_on_loopback(chosen) as url:
        yield url


@pytest.fixture
async def api(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client


def bearer(tenant: str, sub: str = "alice") -> dict[str, str]:
    token = mint_user_token(TEST_SECRET, tenant_id=tenant, sub=sub, roles=[], ttl_seconds=600)
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def user() -> dict[str, str]:
    return bearer(f"doors-{uuid.uuid4().hex[:8]}")
