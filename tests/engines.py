"""Engines the tests open on their own, beside the app's (to read or plant rows the API does not show)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.db import create_engine


@asynccontextmanager
async def direct_engine(url: str) -> AsyncIterator[AsyncEngine]:
    """A small engine of the tests' own on `url`, disposed afterwards."""
    engine = create_engine(url, pool_size=2, max_overflow=2)
    try:
        yield engine
    finally:
        await engine.dispose()
