"""Autonomous turns run on both backends: an app's settings per backend, a loopback server on either,
and the usage tests' module-scoped app per backend (with its admin) for the budget and quota tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.conftest import make_settings
from tests.turns.loopback import serve_on_loopback
from tests.usage.conftest import admin, api

__all__ = ["admin", "api", "backend", "live_backend"]


@pytest.fixture(params=["postgresql", "sqlite"])
def backend(request: pytest.FixtureRequest, settings: Settings, tmp_path: Path) -> Settings:
    """The settings of an app on the test database, or on a SQLite file of the test's own."""
    if request.param == "postgresql":
        return settings
    return make_settings(f"sqlite+aiosqlite:///{tmp_path / 'autonomy.db'}", tmp_path)


@pytest.fixture
async def live_backend(backend: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A real HTTP client against the service under uvicorn on loopback (true streaming), per backend."""
    async with serve_on_loopback(backend) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client
