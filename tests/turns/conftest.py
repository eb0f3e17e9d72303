from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import Settings
from tests.turns.loopback import serve_on_loopback


@pytest.fixture(scope="module")
async def live_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A real HTTP client against the service under uvicorn on loopback (true streaming)."""
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client
