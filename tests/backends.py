"""Fixtures that run a test once per backend: PostgreSQL (raw asyncpg) and a migrated SQLite file.

Registered for every test through `pytest_plugins` in tests/conftest.py; use `engine` or `db`.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.migrate import upgrade_head
from app.core.sql import AlchemySql, AsyncpgSql, Sql, open_sql
from tests.engines import direct_engine


@pytest.fixture(scope="session")
async def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test (migrating takes longer than a test)."""
    path = tmp_path_factory.mktemp("backends") / "template.db"
    await asyncio.to_thread(upgrade_head, f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(params=["postgresql", "sqlite"])
async def engine(
    request: pytest.FixtureRequest, database_url: str, sqlite_template: Path, tmp_path: Path
) -> AsyncIterator[AsyncEngine]:
    if request.param == "postgresql":
        url = database_url
    else:
        shutil.copy(sqlite_template, tmp_path / "backend.db")
        url = f"sqlite+aiosqlite:///{tmp_path / 'backend.db'}"
    async with direct_engine(url) as created:
        yield created


@pytest.fixture
async def db(engine: AsyncEngine) -> AsyncIterator[Sql]:
    """The hot-path runner `open_sql` picks for the engine's backend."""
    sql = await open_sql(engine, max_size=4, acquire_timeout=5)
    assert isinstance(sql, AsyncpgSql if engine.dialect.name == "postgresql" else AlchemySql)
    try:
        yield sql
    finally:
        await sql.close()
