"""The hot-path runner (app/core/sql.py) on real databases: asyncpg on PostgreSQL, SQLAlchemy on SQLite."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import String, Table, any_, bindparam, func, insert, literal, or_, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.db import create_engine
from app.core.sql import (
    INTEGRITY_ERRORS,
    AlchemySql,
    AsyncpgSql,
    PoolExhausted,
    Query,
    Sql,
    bare,
    insert_rows,
    open_sql,
)
from app.models import Agent, Message, Session, TenantPolicy, Turn

AGENTS: Table = Agent.__table__  # type: ignore[assignment]
SESSIONS: Table = Session.__table__  # type: ignore[assignment]
TURNS: Table = Turn.__table__  # type: ignore[assignment]
MESSAGES: Table = Message.__table__  # type: ignore[assignment]
POLICIES: Table = TenantPolicy.__table__  # type: ignore[assignment]

SNAPSHOT = {"model": {"provider": "scripted", "script": [{"text": "hi"}]}, "tools": ["a", "b"], "limits": {}}
SELECT_ONE = Query(select(literal(1)))
TURN_IDS = Query(select(Turn.id).where(Turn.tenant_id == bindparam("tenant")).order_by(Turn.created_at))
COUNT_TURNS = Query(select(func.count()).select_from(TURNS).where(TURNS.c.tenant_id == bindparam("tenant")))
COUNT_AGENTS = Query(select(func.count()).select_from(AGENTS).where(AGENTS.c.tenant_id == bindparam("tenant")))
POLICY_ROW = Query(
    select(TenantPolicy.id, TenantPolicy.created_at, TenantPolicy.policies).where(
        TenantPolicy.tenant_id == bindparam("tenant"), TenantPolicy.version == bindparam("version")
    )
)
NEWEST_POLICIES = Query(  # the shape of app.governance.store.NEWEST_TENANT_POLICIES: a literal LIMIT
    select(TenantPolicy.policies)
    .where(TenantPolicy.tenant_id == bindparam("tenant"))
    .order_by(TenantPolicy.version.desc())
    .limit(1)
)
_turns = bare(TURNS)
SET_STATUS = Query(
    update(_turns)
    .where(_turns.c.tenant_id == bindparam("tenant"), _turns.c.status == bindparam("old"))
    .values(status=bindparam("new"))
)


# --- backends -------------------------------------------------------------------------------------


@asynccontextmanager
async def pg_sql(database_url: str, *, max_size: int, acquire_timeout: float) -> AsyncIterator[Sql]:
    engine = create_engine(database_url)
    sql = await open_sql(engine, max_size=max_size, acquire_timeout=acquire_timeout)
    try:
        yield sql
    finally:
        await sql.close()
        await engine.dispose()


# --- rows -----------------------------------------------------------------------------------------


def now() -> datetime:
    return datetime.now(UTC)


def agent_row(tenant: str) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "tenant_id": tenant, "created_at": now(), "name": "a", "description": None,
            "current_version": 1, "created_by": "alice", "updated_at": now(), "archived_at": None}  # fmt: skip


def session_row(tenant: str, agent_id: uuid.UUID, **over: Any) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "tenant_id": tenant, "created_at": now(), "agent_id": agent_id,
            "agent_version": 1, "owner_sub": "alice", "snapshot": SNAPSHOT, "metadata": {}, "status": "open",
            "updated_at": now(), "closed_at": None, **over}  # fmt: skip


def turn_row(tenant: str, session_id: uuid.UUID, **over: Any) -> dict[str, Any]:
    """Never `running`: the lease sweep of any app started on the shared database would fail such a turn."""
    return {"id": uuid.uuid4(), "tenant_id": tenant, "created_at": now(), "session_id": session_id,
            "status": "completed", "input": "go", "final_output": None, "error": None, "input_tokens": 0,
            "output_tokens": 0, "loop_count": 0, "max_loops": 8, "max_output_tokens": 1000, "last_seq": 0,
            "owner_sub": "alice", "resumed_by": None, "runner_id": None, "updated_at": now(), "ended_at": None,
            **over}  # fmt: skip


def policy_row(tenant: str, version: int, **over: Any) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "tenant_id": tenant, "created_at": now(), "version": version,
            "policies": [{"id": f"v{version}"}], "policy_hash": "h" * 64, "created_by": "alice", **over}  # fmt: skip


def tenant_id() -> str:
    return f"sql-{uuid.uuid4().hex[:10]}"


async def seed_session(db: Sql, tenant: str, **over: Any) -> uuid.UUID:
    agent = agent_row(tenant)
    session = session_row(tenant, agent["id"], **over)
    await insert_rows(db, AGENTS, [agent])
    await insert_rows(db, SESSIONS, [session])
    return uuid.UUID(str(session["id"]))


# --- the backend chosen ---------------------------------------------------------------------------


async def test_open_sql_picks_asyncpg_on_postgresql_and_sqlalchemy_on_sqlite(engine: AsyncEngine, db: Sql) -> None:
    if engine.dialect.name == "postgresql":
        assert isinstance(db, AsyncpgSql)
        assert db.dialect == "postgresql"
    else:
        assert isinstance(db, AlchemySql)
        assert db.dialect == "sqlite"


# --- round trips ----------------------------------------------------------------------------------


async def test_json_values_round_trip(db: Sql) -> None:
    tenant = tenant_id()
    nested = {"a": {"b": [1, 2.5, "three", None, True, {"c": []}]}, "unicode": "é✓", "empty": {}}
    session_id = await seed_session(db, tenant, snapshot=nested, metadata={"tags": ["x"]})
    turn_with_error = turn_row(tenant, session_id, error={"code": "boom", "detail": {"loop": 3}})
    turn_without = turn_row(tenant, session_id, error=None)
    await insert_rows(db, TURNS, [turn_with_error, turn_without])
    await insert_rows(db, MESSAGES, [
        {"tenant_id": tenant, "session_id": session_id, "turn_id": turn_with_error["id"], "role": "assistant",
         "content": "", "tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "A"}}],
         "is_error": False, "created_at": now()},
        {"tenant_id": tenant, "session_id": session_id, "turn_id": turn_with_error["id"], "role": "user",
         "content": "hi", "tool_calls": None, "is_error": False, "created_at": now()},
    ])  # fmt: skip

    session = await db.fetchrow(
        Query(select(Session.snapshot, Session.meta).where(Session.id == bindparam("id"))), {"id": session_id}
    )
    errors = await db.fetch(
        Query(select(Turn.id, Turn.error).where(Turn.tenant_id == bindparam("tenant"))), {"tenant": tenant}
    )
    calls = await db.fetch(
        Query(select(Message.tool_calls).where(Message.tenant_id == bindparam("tenant")).order_by(Message.id)),
        {"tenant": tenant},
    )

    assert session is not None
    assert session["snapshot"] == nested
    assert session["metadata"] == {"tags": ["x"]}
    assert {r["id"]: r["error"] for r in errors} == {
        turn_with_error["id"]: {"code": "boom", "detail": {"loop": 3}},
        turn_without["id"]: None,
    }
    assert [r["tool_calls"] for r in calls] == [[{"id": "c1", "name": "echo", "arguments": {"text": "A"}}], None]


async def test_a_json_list_with_scalars_round_trips_through_fetchval(db: Sql) -> None:
    tenant = tenant_id()
    policies = ["a", 1, 2.5, False, None, {"k": [1, {"x": None}]}]
    await insert_rows(db, POLICIES, [policy_row(tenant, 1, policies=policies)])
    assert await db.fetchval(NEWEST_POLICIES, {"tenant": tenant}) == policies


async def test_uuids_come_back_as_uuid(db: Sql) -> None:
    tenant = tenant_id()
    row = policy_row(tenant, 1)
    await insert_rows(db, POLICIES, [row])
    got = await db.fetchrow(POLICY_ROW, {"tenant": tenant, "version": 1})
    assert got is not None
    assert isinstance(got["id"], uuid.UUID)
    assert got["id"] == row["id"]
    assert str(got["id"]) == str(row["id"])


async def test_timestamps_come_back_aware_and_equal(db: Sql) -> None:
    tenant = tenant_id()
    stamp = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    await insert_rows(db, POLICIES, [policy_row(tenant, 1, created_at=stamp)])
    got = await db.fetchrow(POLICY_ROW, {"tenant": tenant, "version": 1})
    assert got is not None
    assert got["created_at"].tzinfo is not None
    assert got["created_at"].utcoffset() == timedelta(0)
    assert got["created_at"] == stamp


async def test_a_timestamp_with_another_offset_keeps_its_instant(db: Sql) -> None:
    tenant = tenant_id()
    stamp = datetime(2024, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    await insert_rows(db, POLICIES, [policy_row(tenant, 1, created_at=stamp)])
    got = await db.fetchrow(POLICY_ROW, {"tenant": tenant, "version": 1})
    assert got is not None
    assert got["created_at"] == stamp  # 10:00 UTC


async def test_fetchval_returns_a_scalar_and_none_without_rows(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id) for _ in range(3)])
    assert await db.fetchval(COUNT_TURNS, {"tenant": tenant}) == 3
    assert await db.fetchval(NEWEST_POLICIES, {"tenant": tenant}) is None
    assert await db.fetchrow(POLICY_ROW, {"tenant": tenant, "version": 1}) is None
    assert await db.fetch(TURN_IDS, {"tenant": tenant_id()}) == []


async def test_execute_returns_the_rows_affected(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, status="completed") for _ in range(2)])
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, status="failed")])

    assert await db.execute(SET_STATUS, {"tenant": tenant, "old": "completed", "new": "cancelled"}) == 2
    assert await db.execute(SET_STATUS, {"tenant": tenant, "old": "completed", "new": "cancelled"}) == 0
    assert await db.execute(SET_STATUS, {"tenant": tenant, "old": "failed", "new": "cancelled"}) == 1
    statuses = await db.fetch(Query(select(Turn.status).where(Turn.tenant_id == bindparam("t"))), {"t": tenant})
    assert [r["status"] for r in statuses] == ["cancelled"] * 3


async def test_execute_counts_zero_for_an_insert_that_did_nothing(db: Sql) -> None:
    """What `TurnStore.ledger_put` relies on to tell a first write from a replay."""
    dialect_insert = pg_insert if db.dialect == "postgresql" else sqlite_insert
    columns = tuple(policy_row("x", 1))
    query = Query(
        dialect_insert(bare(POLICIES))
        .values({c: bindparam(c) for c in columns})
        .on_conflict_do_nothing(index_elements=["tenant_id", "version"])
    )
    tenant = tenant_id()
    assert await db.execute(query, policy_row(tenant, 1)) == 1
    assert await db.execute(query, policy_row(tenant, 1, policies=["second"])) == 0
    assert await db.fetchval(NEWEST_POLICIES, {"tenant": tenant}) == [{"id": "v1"}]


async def test_executemany_inserts_every_row_with_missing_keys_as_null(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    turn = turn_row(tenant, session_id)
    await insert_rows(db, TURNS, [turn])
    base = {"tenant_id": tenant, "session_id": session_id, "turn_id": turn["id"], "is_error": False,
            "created_at": now(), "tool_call_id": "first-row-has-it"}  # fmt: skip
    rows = [{**base, "role": "user", "content": f"m{i}"} for i in range(5)]
    del rows[3]["tool_call_id"]
    await insert_rows(db, MESSAGES, rows)
    got = await db.fetch(
        Query(select(Message.content, Message.tool_call_id).where(Message.turn_id == bindparam("turn"))
              .order_by(Message.id)),
        {"turn": turn["id"]},
    )  # fmt: skip
    assert [(r["content"], r["tool_call_id"]) for r in got] == [
        ("m0", "first-row-has-it"), ("m1", "first-row-has-it"), ("m2", "first-row-has-it"), ("m3", None),
        ("m4", "first-row-has-it"),
    ]  # fmt: skip


async def test_executemany_runs_a_query_once_per_parameter_set(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, status=s) for s in ("completed", "failed")])
    await db.executemany(SET_STATUS, [
        {"tenant": tenant, "old": "completed", "new": "x"}, {"tenant": tenant, "old": "failed", "new": "y"},
    ])  # fmt: skip
    statuses = await db.fetch(Query(select(Turn.status).where(Turn.tenant_id == bindparam("t"))), {"t": tenant})
    assert sorted(r["status"] for r in statuses) == ["x", "y"]


async def test_a_single_statement_outside_a_transaction_is_committed(engine: AsyncEngine, db: Sql) -> None:
    tenant = tenant_id()
    await insert_rows(db, POLICIES, [policy_row(tenant, 1)])
    async with engine.connect() as conn:
        found = await conn.scalar(text("SELECT count(*) FROM tenant_policies WHERE tenant_id = :t"), {"t": tenant})
    assert found == 1


# --- parameters -----------------------------------------------------------------------------------


async def test_a_literal_in_the_statement_keeps_its_value_next_to_a_bindparam(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    failed = turn_row(tenant, session_id, status="failed")
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, status="completed"), failed,
                                  turn_row(tenant, session_id, status="cancelled")])  # fmt: skip
    query = Query(select(Turn.id).where(Turn.tenant_id == bindparam("tenant"), Turn.status == "failed"))
    assert [r["id"] for r in await db.fetch(query, {"tenant": tenant})] == [failed["id"]]


async def test_a_literal_limit_keeps_its_value(db: Sql) -> None:
    tenant = tenant_id()
    await insert_rows(db, POLICIES, [policy_row(tenant, v) for v in (1, 3, 2)])
    assert [dict(r) for r in await db.fetch(NEWEST_POLICIES, {"tenant": tenant})] == [{"policies": [{"id": "v3"}]}]


async def test_a_bindparam_used_twice_is_sent_once_by_name(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, owner_sub=tenant)])
    query = Query(
        select(func.count())
        .select_from(TURNS)
        .where(
            or_(Turn.tenant_id == bindparam("who"), Turn.owner_sub == bindparam("who")),
            Turn.owner_sub == bindparam("who"),
        )
    )
    assert await db.fetchval(query, {"who": tenant}) == 1


async def test_a_missing_bind_parameter_raises_instead_of_sending_null(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id)])
    with pytest.raises(SQLAlchemyError, match="A value is required for bind parameter 'tenant'"):
        await db.fetch(TURN_IDS, {"tenant_id": tenant})
    with pytest.raises(SQLAlchemyError, match="A value is required for bind parameter 'tenant'"):
        await db.fetchval(COUNT_TURNS)
    with pytest.raises(SQLAlchemyError, match="A value is required for bind parameter 'new'"):
        await db.execute(SET_STATUS, {"tenant": tenant, "old": "completed"})
    statuses = await db.fetch(Query(select(Turn.status).where(Turn.tenant_id == bindparam("t"))), {"t": tenant})
    assert [r["status"] for r in statuses] == ["completed"]


async def test_an_in_list_is_refused_with_a_clear_error_and_any_array_works(db: Sql) -> None:
    """asyncpg gets the SQL as compiled once, so an IN list (an expanding parameter) cannot be expanded per
    call: the asyncpg path refuses it by name rather than sending a placeholder; `= ANY(:array)` is the way."""
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    failed = turn_row(tenant, session_id, status="failed")
    await insert_rows(db, TURNS, [failed, turn_row(tenant, session_id, status="completed")])
    if db.dialect != "postgresql":
        pytest.skip("SQLite runs statements through SQLAlchemy, which expands IN lists itself")
    in_list = Query(select(Turn.id).where(Turn.tenant_id == bindparam("tenant"), Turn.status.in_(["failed"])))
    with pytest.raises(TypeError, match="IN lists are not supported"):
        await db.fetch(in_list, {"tenant": tenant})
    statuses = bindparam("statuses", type_=ARRAY(String()))
    query = Query(select(Turn.id).where(Turn.tenant_id == bindparam("tenant"), Turn.status == any_(statuses)))
    rows = await db.fetch(query, {"tenant": tenant, "statuses": ["failed", "x"]})
    assert [r["id"] for r in rows] == [failed["id"]]


# --- bare tables ----------------------------------------------------------------------------------


async def test_bare_inserts_send_only_the_given_values_not_python_defaults(engine: AsyncEngine, db: Sql) -> None:
    """`created_at` has a Python default (utcnow) in the model and none in the database."""
    tenant = tenant_id()
    row = policy_row(tenant, 1)
    del row["created_at"]
    with pytest.raises(INTEGRITY_ERRORS):
        await insert_rows(db, POLICIES, [row])
    assert await db.fetchval(NEWEST_POLICIES, {"tenant": tenant}) is None
    async with engine.begin() as conn:  # the ORM table, by contrast, fills the default in
        await conn.execute(insert(POLICIES).values(row))
    assert await db.fetchval(NEWEST_POLICIES, {"tenant": tenant}) == [{"id": "v1"}]


async def test_a_json_none_is_stored_as_sql_null_on_both_backends(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, error=None)])
    query = Query(select(func.count()).select_from(TURNS).where(
        TURNS.c.tenant_id == bindparam("tenant"), TURNS.c.error.is_(None)))  # fmt: skip
    assert await db.fetchval(query, {"tenant": tenant}) == 1


# --- transactions ---------------------------------------------------------------------------------


async def test_a_transaction_commits_all_its_statements_together(engine: AsyncEngine, db: Sql) -> None:
    tenant = tenant_id()
    agent = agent_row(tenant)
    async with db.transaction() as tx:
        await insert_rows(tx, AGENTS, [agent])
        await insert_rows(tx, SESSIONS, [session_row(tenant, agent["id"])])
        assert await tx.fetchval(COUNT_AGENTS, {"tenant": tenant}) == 1
        async with engine.connect() as outside:
            seen = await outside.scalar(text("SELECT count(*) FROM agents WHERE tenant_id = :t"), {"t": tenant})
        assert seen == 0
    assert await db.fetchval(COUNT_AGENTS, {"tenant": tenant}) == 1
    sessions = Query(select(func.count()).select_from(SESSIONS).where(SESSIONS.c.tenant_id == bindparam("t")))
    assert await db.fetchval(sessions, {"t": tenant}) == 1


class Boom(Exception):
    pass


async def update_then_fail(db: Sql, tenant: str, session_id: uuid.UUID) -> None:
    async with db.transaction() as tx:
        await insert_rows(tx, TURNS, [turn_row(tenant, session_id), turn_row(tenant, session_id)])
        assert await tx.execute(SET_STATUS, {"tenant": tenant, "old": "completed", "new": "failed"}) == 3
        raise Boom


async def test_an_exception_rolls_back_every_statement_of_the_transaction(db: Sql) -> None:
    tenant = tenant_id()
    session_id = await seed_session(db, tenant)
    await insert_rows(db, TURNS, [turn_row(tenant, session_id, status="completed")])
    with pytest.raises(Boom):
        await update_then_fail(db, tenant, session_id)
    statuses = await db.fetch(Query(select(Turn.status).where(Turn.tenant_id == bindparam("t"))), {"t": tenant})
    assert [r["status"] for r in statuses] == ["completed"]


async def insert_versions(db: Sql, tenant: str, versions: list[int]) -> None:
    async with db.transaction() as tx:
        for version in versions:
            await insert_rows(tx, POLICIES, [policy_row(tenant, version)])


async def test_a_failing_statement_rolls_back_the_ones_before_it(db: Sql) -> None:
    tenant = tenant_id()
    with pytest.raises(INTEGRITY_ERRORS):
        await insert_versions(db, tenant, [1, 2, 1])
    assert await db.fetch(NEWEST_POLICIES, {"tenant": tenant}) == []


# --- errors ---------------------------------------------------------------------------------------


async def test_a_unique_violation_is_one_of_the_integrity_errors(db: Sql) -> None:
    tenant = tenant_id()
    await insert_rows(db, POLICIES, [policy_row(tenant, 1)])
    caught = False
    try:
        await insert_rows(db, POLICIES, [policy_row(tenant, 1, policies=["dup"])])
    except INTEGRITY_ERRORS:
        caught = True
    assert caught
    assert await db.fetchval(NEWEST_POLICIES, {"tenant": tenant}) == [{"id": "v1"}]


async def test_a_unique_violation_in_executemany_is_one_of_the_integrity_errors(db: Sql) -> None:
    tenant = tenant_id()
    with pytest.raises(INTEGRITY_ERRORS):
        await insert_rows(db, POLICIES, [policy_row(tenant, 1), policy_row(tenant, 1)])


async def test_a_foreign_key_violation_is_one_of_the_integrity_errors(db: Sql) -> None:
    with pytest.raises(INTEGRITY_ERRORS):
        await insert_rows(db, TURNS, [turn_row(tenant_id(), uuid.uuid4())])


# --- the asyncpg pool -----------------------------------------------------------------------------


async def test_a_pool_with_no_free_connection_raises_pool_exhausted(database_url: str) -> None:
    async with pg_sql(database_url, max_size=1, acquire_timeout=0.2) as sql:
        async with sql.transaction() as tx:
            assert await tx.fetchval(SELECT_ONE) == 1
            started = time.monotonic()
            with pytest.raises(PoolExhausted):
                await asyncio.create_task(sql.fetchval(SELECT_ONE))
            waited = time.monotonic() - started
            assert 0.15 <= waited < 3
            assert await tx.fetchval(SELECT_ONE) == 1  # the holder is unaffected
        assert await sql.fetchval(SELECT_ONE) == 1
        assert await asyncio.gather(*(sql.fetchval(SELECT_ONE) for _ in range(5))) == [1] * 5


async def test_a_waiting_call_gets_the_connection_once_it_is_released(database_url: str) -> None:
    async with pg_sql(database_url, max_size=1, acquire_timeout=5) as sql:
        async with sql.transaction() as tx:
            await tx.fetchval(SELECT_ONE)
            waiting = asyncio.create_task(sql.fetchval(SELECT_ONE))
            await asyncio.sleep(0.1)
            assert not waiting.done()
        assert await waiting == 1


def test_args_are_what_construct_params_gives_for_every_statement_of_the_app() -> None:
    """`Query.args` reads the parameters without SQLAlchemy's per-call walk; for every statement the
    service defines it must send exactly the values `construct_params` would."""
    import gc

    import app.main  # noqa: F401 - defines every hot-path statement

    compared = 0
    for query in [q for q in gc.get_objects() if isinstance(q, Query)]:
        try:
            compiled = query._compiled
        except Exception:  # an IN list (refused by design, tested above), or a statement only SQLite runs
            continue
        compared += 1
        params = {bind.key: f"value-{name}" for name, bind in compiled.binds.items() if bind.required}
        expected = compiled.construct_params(params, _check=True)
        assert query.args(params) == [expected[name] for name in compiled.positiontup or ()], query.sql
    assert compared > 20
