"""Run Alembic programmatically (`agent-runtime migrate`, and at start-up on SQLite), and tell whether a
database's schema is at the migrations' head (`/readyz`)."""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

SCRIPT_LOCATION = Path(__file__).resolve().parents[1] / "migrations"
MIGRATE_HINT = "run `agent-runtime migrate`"
log = logging.getLogger(__name__)


def alembic_config(url: str) -> Config:
    """The migrations ship inside the package, so this works from a wheel or the Docker image alike;
    `alembic.ini` at the project root points at the same folder for the `alembic` command itself."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade_head(url: str) -> None:
    """Blocking (Alembic's env runs its own event loop): call it from a thread inside async code."""
    command.upgrade(alembic_config(url), "head")


def downgrade_base(url: str) -> None:
    command.downgrade(alembic_config(url), "base")


@cache
def head_revisions() -> frozenset[str]:
    """Blocking (reads the revision files) the first time only: call it from a thread."""
    return frozenset(ScriptDirectory(str(SCRIPT_LOCATION)).get_heads())


async def schema_problem(conn: AsyncConnection, heads: frozenset[str]) -> str | None:
    """Why the connected database's schema is not at `heads`, or None when it is."""
    try:
        stored = frozenset((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars())
    except DBAPIError:
        return f"the database has no schema yet: {MIGRATE_HINT}"
    if stored == heads:
        return None
    current = ", ".join(sorted(stored)) or "empty"
    return f"the database schema is at {current}, the migrations' head is {', '.join(sorted(heads))}: {MIGRATE_HINT}"


async def readiness_problem(engine: AsyncEngine, heads: frozenset[str]) -> str | None:
    """Why the database cannot take traffic, or None; raises SQLAlchemy's or the OS's error when it
    does not answer (a bare `SELECT 1` first, so a lost connection is never read as a missing schema)."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
        return await schema_problem(conn, heads)


async def warn_if_unmigrated(engine: AsyncEngine) -> None:
    """At start-up on PostgreSQL (never migrated implicitly there): say plainly what to run."""
    heads = await asyncio.to_thread(head_revisions)
    try:
        async with engine.connect() as conn:
            problem = await schema_problem(conn, heads)
    except (OSError, SQLAlchemyError):
        return  # unreachable: /readyz reports it
    if problem is not None:
        log.error("not ready: %s", problem)
