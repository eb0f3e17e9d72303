"""The Alembic history: reversible, identical to the models, and the same on PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, insert, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from app.core.db import create_engine
from app.core.migrate import alembic_config, downgrade_base, upgrade_head
from app.models import Agent, AgentVersion, Base, Session, Turn
from tests.conftest import BASE_URL, make_settings, running_app

PROJECT_ROOT = Path(__file__).resolve().parents[1]

ALL_TABLES = {table.name for table in Base.metadata.sorted_tables}
SQLITE_FTS_PREFIX = "memory_search"
"""SQLite's FTS5 table for memory search (and its shadow tables): a virtual table, kept by the
migration and its triggers, with no model."""


def _modelled(name: str | None, type_: str, parent_names: Any) -> bool:
    return not (type_ == "table" and name is not None and name.startswith(SQLITE_FTS_PREFIX))


def _admin_dsn() -> str:
    return make_url(BASE_URL).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(_admin_dsn())
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture
def fresh_pg_url() -> Iterator[str]:
    """An empty PostgreSQL database of this test's own (the session database is already migrated)."""
    name = f"agent_runtime_mig_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(BASE_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'migrations.db'}"


def _inspect(url: str) -> tuple[set[str], list[Any], dict[str, list[dict[str, Any]]]]:
    """Tables, the autogenerate diff against the models, and the indexes, read in one connection."""

    def read(conn: Connection) -> tuple[set[str], list[Any], dict[str, list[dict[str, Any]]]]:
        inspector = inspect(conn)
        tables = set(inspector.get_table_names())
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "target_metadata": Base.metadata, "include_name": _modelled}
        )
        diff = compare_metadata(context, Base.metadata)
        indexes = {t: list(inspector.get_indexes(t)) for t in tables}
        return tables, diff, indexes

    async def run() -> tuple[set[str], list[Any], dict[str, list[dict[str, Any]]]]:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(read)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_upgrade_downgrade_upgrade_round_trips_on_postgres(fresh_pg_url: str) -> None:
    upgrade_head(fresh_pg_url)
    tables, _, _ = _inspect(fresh_pg_url)
    assert tables >= ALL_TABLES

    downgrade_base(fresh_pg_url)
    tables, diff, _ = _inspect(fresh_pg_url)
    assert tables - {"alembic_version"} == set()
    assert {d[1].name for d in diff if d[0] == "add_table"} == ALL_TABLES  # the comparison is live

    upgrade_head(fresh_pg_url)
    tables, diff, _ = _inspect(fresh_pg_url)
    assert tables >= ALL_TABLES
    assert diff == []


def test_models_match_migrations_on_postgres(fresh_pg_url: str) -> None:
    upgrade_head(fresh_pg_url)
    _, diff, _ = _inspect(fresh_pg_url)
    assert diff == [], f"models and migrations differ; generate a revision: {diff}"


def test_schema_has_every_design_table() -> None:
    design = {
        "agents",
        "agent_versions",
        "sessions",
        "turns",
        "turn_events",
        "messages",
        "approvals",
        "tool_executions",
        "policy_decisions",
        "usage",
    }
    assert design <= ALL_TABLES
    for name in design - {"agents"}:
        assert "tenant_id" in Base.metadata.tables[name].c, name


def test_same_migrations_run_on_sqlite(sqlite_url: str) -> None:
    upgrade_head(sqlite_url)
    tables, diff, indexes = _inspect(sqlite_url)
    assert tables >= ALL_TABLES
    assert diff == []
    active = [i for i in indexes["turns"] if i["name"] == "uq_turns_one_active_per_session"]
    assert active
    assert active[0]["unique"]
    downgrade_base(sqlite_url)
    upgrade_head(sqlite_url)


async def _seed_session(conn: Any) -> uuid.UUID:
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    agent_id, session_id = uuid.uuid4(), uuid.uuid4()
    await conn.execute(
        insert(Agent).values(
            id=agent_id,
            tenant_id=tenant,
            name="a",
            current_version=1,
            created_by="alice",
        )
    )
    await conn.execute(
        insert(AgentVersion).values(
            id=uuid.uuid4(),
            tenant_id=tenant,
            agent_id=agent_id,
            version=1,
            config={},
            created_by="alice",
        )
    )
    await conn.execute(
        insert(Session).values(
            id=session_id,
            tenant_id=tenant,
            agent_id=agent_id,
            agent_version=1,
            owner_sub="alice",
            snapshot={},
            meta={},
            status="open",
        )
    )
    return session_id


def _turn(session_id: uuid.UUID, status: str) -> Any:
    return insert(Turn).values(
        id=uuid.uuid4(),
        tenant_id="t",
        session_id=session_id,
        status=status,
        input="hi",
        input_tokens=0,
        output_tokens=0,
        loop_count=0,
        max_loops=8,
        max_output_tokens=100,
        last_seq=0,
        owner_sub="alice",
    )


async def _assert_one_active_turn_per_session(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            session_id = await _seed_session(conn)
            other_session = await _seed_session(conn)
            for status in ("completed", "failed", "cancelled", "running"):
                await conn.execute(_turn(session_id, status))
            await conn.execute(_turn(other_session, "interrupted"))  # another session is independent
        for second in ("running", "interrupted"):
            async with engine.connect() as conn:
                with pytest.raises(IntegrityError):
                    await conn.execute(_turn(session_id, second))
                await conn.rollback()
        async with engine.begin() as conn:
            await conn.execute(_turn(session_id, "completed"))
    finally:
        await engine.dispose()


async def test_second_active_turn_for_a_session_is_rejected_on_postgres(database_url: str) -> None:
    await _assert_one_active_turn_per_session(database_url)


def test_second_active_turn_for_a_session_is_rejected_on_sqlite(sqlite_url: str) -> None:
    upgrade_head(sqlite_url)
    asyncio.run(_assert_one_active_turn_per_session(sqlite_url))


async def test_readyz_is_503_naming_the_fix_while_the_schema_is_not_at_head(
    fresh_pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="app.core.migrate")
    async with running_app(make_settings(fresh_pg_url, tmp_path)) as (_, client):
        assert "run `agent-runtime migrate`" in caplog.text
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["reason"] == "schema_not_at_head"
        assert "agent-runtime migrate" in body["detail"]

        await asyncio.to_thread(upgrade_head, fresh_pg_url)
        assert (await client.get("/readyz")).status_code == 200

        await asyncio.to_thread(_downgrade_one, fresh_pg_url)
        behind = await client.get("/readyz")
        assert behind.status_code == 503
        assert "the database schema is at" in behind.json()["detail"]


def _downgrade_one(url: str) -> None:
    command.downgrade(alembic_config(url), "-1")


def test_migrate_works_from_the_built_wheel_alone(fresh_pg_url: str, tmp_path: Path) -> None:
    """The wheel carries the migrations: unpacked away from the source tree, it migrates a database."""
    source = tmp_path / "src"
    shutil.copytree(PROJECT_ROOT / "app", source / "app", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT_ROOT / name, source / name)
    uv = Path(sys.executable).parent / "uv"
    build = [str(uv), "build", "--wheel", "-q", "-o", str(tmp_path / "dist"), str(source)]
    subprocess.run(build, check=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    code = "from app.core import migrate; migrate.upgrade_head(sys.argv[1]); print(migrate.__file__)"
    ran = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(installed)!r}); {code}", fresh_pg_url],
        check=True,
        cwd=tmp_path,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert ran.stdout.strip() == str(installed / "app" / "core" / "migrate.py")
    tables, diff, _ = _inspect(fresh_pg_url)
    assert tables >= ALL_TABLES
    assert diff == []
