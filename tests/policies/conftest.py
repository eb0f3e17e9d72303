"""A direct SQL engine on the test database, to read the ledger and receipts the API does not show."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.db import create_engine


@pytest.fixture(scope="session")
async def sql(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=2, max_overflow=2)
    try:
        yield engine
    finally:
        await engine.dispose()
