"""A throw-away PostgreSQL database for one bench run: created, migrated, dropped at the end."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from app.core.sql import asyncpg_dsn

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
NAME = re.compile(r"^bench_(\d+)_[0-9a-f]{6}$")


def admin_url_from_env() -> str:
    return os.environ.get("BENCH_PG_URL") or os.environ.get("TEST_DATABASE_URL") or DEFAULT_ADMIN_URL


class BenchDatabase:
    def __init__(self, admin_url: str) -> None:
        url = make_url(admin_url)
        self.name = f"bench_{os.getpid()}_{secrets.token_hex(3)}"
        self._admin_dsn = asyncpg_dsn(url)
        self.url = url.set(drivername="postgresql+asyncpg", database=self.name).render_as_string(hide_password=False)
        self._dsn = asyncpg_dsn(url.set(database=self.name))
        self.address = (url.host or "127.0.0.1", url.port or 5432)
        """Where the PostgreSQL server listens (bench/pgwire.py's upstream)."""
        self.created = False

    @property
    def dsn(self) -> str:
        """The bench database itself, for asyncpg."""
        return self._dsn

    def url_via(self, host: str, port: int) -> str:
        """The bench database's URL with another address: a proxy in front of the server."""
        return make_url(self.url).set(host=host, port=port).render_as_string(hide_password=False)

    async def _admin(self, sql: str) -> None:
        conn = await asyncpg.connect(self._admin_dsn, timeout=10)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def headroom(self) -> tuple[int, int]:
        """(max_connections, connections in use now) of the PostgreSQL server."""
        conn = await asyncpg.connect(self._admin_dsn, timeout=10)
        try:
            limit = int(await conn.fetchval("SHOW max_connections"))
            used = int(await conn.fetchval("SELECT count(*) FROM pg_stat_activity"))
        finally:
            await conn.close()
        return limit, used

    async def stats(self) -> dict[str, int]:
        """Cumulative counters of the bench database: transactions, and rows by table and operation.

        PostgreSQL publishes a backend's counters when it goes idle, at most once a second and at the
        latest after 10 s: read them after the load has been idle that long.
        """
        conn = await asyncpg.connect(self._dsn, timeout=10)
        try:
            db = await conn.fetchrow(
                "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_fetched "
                "FROM pg_stat_database WHERE datname = current_database()"
            )
            tables = await conn.fetch(
                "SELECT relname, n_tup_ins, n_tup_upd, seq_scan, idx_scan FROM pg_stat_user_tables"
            )
        finally:
            await conn.close()
        out = {f"db.{key}": int(value) for key, value in db.items()}
        for row in tables:
            for key in ("n_tup_ins", "n_tup_upd", "seq_scan", "idx_scan"):
                out[f"{row['relname']}.{key}"] = int(row[key] or 0)
        return out

    async def drop_stale(self) -> list[str]:
        """Drop bench databases left by runs that were killed outright (their process is gone)."""
        conn = await asyncpg.connect(self._admin_dsn, timeout=10)
        dropped = []
        try:
            for row in await conn.fetch("SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_%'"):
                match = NAME.match(row["datname"])
                if match and not Path(f"/proc/{match.group(1)}").exists():
                    await conn.execute(f'DROP DATABASE IF EXISTS "{row["datname"]}" WITH (FORCE)')
                    dropped.append(row["datname"])
        finally:
            await conn.close()
        return dropped

    async def create(self) -> None:
        await self._admin(f'CREATE DATABASE "{self.name}"')
        self.created = True

    async def migrate(self) -> None:
        from app.core.migrate import upgrade_head

        await asyncio.to_thread(upgrade_head, self.url)

    async def drop(self) -> None:
        if self.created:
            await self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self.created = False


PG_MARGIN = 8  # connections left for everyone else on a shared PostgreSQL


def server_connections() -> int:
    """The most connections agent-runtime opens with the pool settings of this environment."""
    from app.settings import DbSettings

    return DbSettings().max_connections


def pool_settings(mode: str, max_connections: int, in_use: int) -> dict[str, str]:
    """Env overrides for agent-runtime's pools: none unless asked, or unless `auto` finds too few connections.

    The server needs both pools plus one LISTEN connection (`DbSettings.max_connections`); on a
    PostgreSQL shared with others (max_connections 100 by default) `auto` shrinks the turn pool to
    what is free rather than measure "too many clients" errors.
    """
    if mode == "default":
        return {}
    if mode != "auto":
        return {"DATABASE_POOL_SIZE": mode}
    from app.settings import DbSettings

    settings = DbSettings()
    free = max_connections - in_use - PG_MARGIN
    if free >= settings.max_connections:
        return {}
    others = settings.max_connections - settings.pool_size
    return {"DATABASE_POOL_SIZE": str(max(2, free - others))}
