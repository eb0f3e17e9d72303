"""The statements a turn runs: written once as SQLAlchemy Core, executed on raw asyncpg on PostgreSQL.

Measured on the bench machine (docs/performance.md): a Core statement executed through SQLAlchemy's
asyncpg dialect on a pooled connection costs ~0.9 ms of client CPU, the same statement on a connection
of an asyncpg pool ~0.16 ms, and a turn runs about ten of them. So the hot path compiles each
statement once for asyncpg and runs it on a pool of its own; SQLite (the embedded, single-process
default) runs the very same statements through SQLAlchemy. Everything else (the REST resources) keeps
the ORM.

On the asyncpg path no SQLAlchemy type processing happens: values go to asyncpg as they are (UUIDs,
aware datetimes, dicts and lists for JSONB through the codec set up here) and rows come back as
asyncpg records. Hot-path statements therefore use only such types.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import cached_property, lru_cache
from typing import Any, Protocol, cast

import asyncpg
import orjson
from sqlalchemy import JSON, Table, TableClause, bindparam, column, insert
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql.asyncpg import dialect as AsyncpgDialect
from sqlalchemy.engine import URL
from sqlalchemy.exc import IntegrityError, InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.types import TypeEngine

from app.core.db import is_sqlite, json_text
from app.core.db_spans import statement_span

Row = Mapping[str, Any]
_ASYNCPG = AsyncpgDialect()  # type: ignore[no-untyped-call]


INTEGRITY_ERRORS: tuple[type[Exception], ...] = (IntegrityError, asyncpg.IntegrityConstraintViolationError)
"""What a violated constraint raises, on either path."""


class PoolExhausted(Exception):
    """No pooled connection became free in time (answered 503 with Retry-After)."""


class Query:
    """A Core statement with named bind parameters, compiled into asyncpg's SQL on first use.

    (Lazily, so a statement only SQLite runs is never compiled for PostgreSQL.)
    """

    def __init__(self, statement: Executable) -> None:
        self.statement = statement

    @cached_property
    def _compiled(self) -> SQLCompiler:
        """IN lists (expanding parameters) are refused: asyncpg gets the SQL as compiled here, with
        no per-call expansion. Write `= ANY(:array)` instead."""
        compiled: SQLCompiler = self.statement.compile(dialect=_ASYNCPG)  # type: ignore[attr-defined]
        if "__[POSTCOMPILE_" in str(compiled):
            raise TypeError("IN lists are not supported by app.core.sql.Query; use `= ANY(:array)`")
        return compiled

    @cached_property
    def sql(self) -> str:
        return str(self._compiled)

    @cached_property
    def _names(self) -> tuple[str, ...]:
        return tuple(self._compiled.positiontup or ())

    @cached_property
    def _slots(self) -> tuple[tuple[str, str, BindParameter[Any]], ...]:
        """Each positional argument's parameter key, compiled name and bind (for a literal's value)."""
        binds = self._compiled.binds
        return tuple((binds[name].key, name, binds[name]) for name in self._names)

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        """Positional arguments; literals written into the statement keep their own values.

        What `construct_params(params, _check=True)` returns for these names, without its per-call
        walk over every bind of the statement (~50 µs a statement, measured)."""
        values = []
        for key, name, bind in self._slots:
            if key in params:
                values.append(params[key])
            elif name in params:
                values.append(params[name])
            elif bind.required:
                raise InvalidRequestError(f"A value is required for bind parameter {key!r}")
            else:
                values.append(bind.effective_value)
        return values


@lru_cache(maxsize=32)
def bare(table: Table) -> TableClause:
    """`table` without its Python-side defaults and primary-key RETURNING: statements on it send
    exactly the values given (hot-path rows carry all of theirs). A None in a JSON column is SQL
    NULL, as on the asyncpg path (SQLAlchemy's JSON would store the JSON `null`)."""
    return TableClause(table.name, *(column(c.name, _none_as_null(c.type)) for c in table.columns))


def _none_as_null(kind: TypeEngine[Any]) -> TypeEngine[Any]:
    return (
        JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql") if isinstance(kind, JSON) else kind
    )


@lru_cache(maxsize=256)
def insert_query(table: Table, columns: tuple[str, ...]) -> Query:
    return Query(insert(bare(table)).values({c: bindparam(c) for c in columns}))


class Sql(Protocol):
    """Run hot-path queries; outside `transaction()` every call is its own autocommitted statement."""

    dialect: str

    async def fetch(self, query: Query, params: Mapping[str, Any] | None = None) -> list[Row]: ...

    async def fetchrow(self, query: Query, params: Mapping[str, Any] | None = None) -> Row | None: ...

    async def fetchval(self, query: Query, params: Mapping[str, Any] | None = None) -> Any: ...

    async def execute(self, query: Query, params: Mapping[str, Any] | None = None) -> int:
        """Rows affected."""
        ...

    async def executemany(self, query: Query, rows: Sequence[Mapping[str, Any]]) -> None: ...

    def transaction(self) -> AbstractAsyncContextManager[Sql]: ...

    async def close(self) -> None: ...


async def insert_rows(sql: Sql, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert rows of one table; columns are every key of any row (a key a row lacks is NULL)."""
    columns = tuple(dict.fromkeys(key for row in rows for key in row))
    query = insert_query(table, columns)
    if len(rows) == 1:
        await sql.execute(query, rows[0])
    else:
        await sql.executemany(query, [{c: row.get(c) for c in columns} for row in rows])


_EMPTY: Mapping[str, Any] = {}


class AsyncpgSql:
    """Queries on a pool of asyncpg connections (one per call), or on one connection in a transaction."""

    dialect = "postgresql"

    def __init__(self, pool: asyncpg.Pool, *, acquire_timeout: float, conn: asyncpg.Connection | None = None) -> None:
        self._pool = pool
        self._timeout = acquire_timeout
        self._conn = conn

    def pool_connections(self) -> tuple[int, int]:
        """(in use, idle) connections of the pool."""
        size, idle = self._pool.get_size(), self._pool.get_idle_size()
        return size - idle, idle

    @asynccontextmanager
    async def _acquire(self) -> AsyncIterator[asyncpg.Connection]:
        if self._conn is not None:
            yield self._conn
            return
        try:
            conn = await self._pool.acquire(timeout=self._timeout)
        except TimeoutError as exc:
            raise PoolExhausted from exc
        try:
            yield conn
        finally:
            await self._pool.release(conn)

    @asynccontextmanager
    async def _connection(self, query: Query) -> AsyncIterator[asyncpg.Connection]:
        """A connection for one statement, inside its database span (a no-op while tracing is off)."""
        with statement_span("postgresql", query.sql):
            async with self._acquire() as conn:
                yield conn

    async def fetch(self, query: Query, params: Mapping[str, Any] | None = None) -> list[Row]:
        async with self._connection(query) as conn:
            return await conn.fetch(query.sql, *query.args(params or _EMPTY))  # type: ignore[no-any-return]

    async def fetchrow(self, query: Query, params: Mapping[str, Any] | None = None) -> Row | None:
        async with self._connection(query) as conn:
            return await conn.fetchrow(query.sql, *query.args(params or _EMPTY))  # type: ignore[no-any-return]

    async def fetchval(self, query: Query, params: Mapping[str, Any] | None = None) -> Any:
        async with self._connection(query) as conn:
            return await conn.fetchval(query.sql, *query.args(params or _EMPTY))

    async def execute(self, query: Query, params: Mapping[str, Any] | None = None) -> int:
        async with self._connection(query) as conn:
            status: str = await conn.execute(query.sql, *query.args(params or _EMPTY))
        count = status.rpartition(" ")[2]
        return int(count) if count.isdigit() else 0

    async def executemany(self, query: Query, rows: Sequence[Mapping[str, Any]]) -> None:
        async with self._connection(query) as conn:
            await conn.executemany(query.sql, [query.args(row) for row in rows])

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Sql]:
        async with self._acquire() as conn, conn.transaction():
            yield AsyncpgSql(self._pool, acquire_timeout=self._timeout, conn=conn)

    async def close(self) -> None:
        await self._pool.close()


class AlchemySql:
    """The same queries through SQLAlchemy (SQLite): autocommitted statements, or one transaction."""

    def __init__(self, engine: AsyncEngine, conn: AsyncConnection | None = None) -> None:
        self._engine = engine
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._conn = conn
        self.dialect = engine.dialect.name

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection]:
        if self._conn is not None:
            yield self._conn
            return
        async with self._autocommit.connect() as conn:
            yield conn

    async def fetch(self, query: Query, params: Mapping[str, Any] | None = None) -> list[Row]:
        async with self._connection() as conn:
            return cast(list[Row], list((await conn.execute(query.statement, params or _EMPTY)).mappings()))

    async def fetchrow(self, query: Query, params: Mapping[str, Any] | None = None) -> Row | None:
        async with self._connection() as conn:
            return cast(Row | None, (await conn.execute(query.statement, params or _EMPTY)).mappings().first())

    async def fetchval(self, query: Query, params: Mapping[str, Any] | None = None) -> Any:
        async with self._connection() as conn:
            return (await conn.execute(query.statement, params or _EMPTY)).scalar()

    async def execute(self, query: Query, params: Mapping[str, Any] | None = None) -> int:
        async with self._connection() as conn:
            return int((await conn.execute(query.statement, params or _EMPTY)).rowcount)

    async def executemany(self, query: Query, rows: Sequence[Mapping[str, Any]]) -> None:
        async with self._connection() as conn:
            await conn.execute(query.statement, list(rows))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Sql]:
        async with self._engine.begin() as conn:
            yield AlchemySql(self._engine, conn)

    async def close(self) -> None:
        """The engine belongs to the caller."""


def asyncpg_dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


async def _setup_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, schema="pg_catalog", encoder=json_text, decoder=orjson.loads, format="text")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """No reset query on release (asyncpg's default sends `SELECT pg_advisory_unlock_all(); CLOSE ALL;
    UNLISTEN *; RESET ALL;`: a second round trip per statement). Hot-path statements never change
    session state: no SET, LISTEN, advisory lock or cursor. An open transaction is still rolled back
    by the pool before this runs."""


async def open_sql(engine: AsyncEngine, *, max_size: int, acquire_timeout: float) -> Sql:
    """The hot-path runner for `engine`'s database: an asyncpg pool on PostgreSQL, the engine elsewhere.

    The pool opens connections on demand and keeps them (asyncpg closes one idle for 5 minutes); it
    sends no reset query when a connection is released (`_keep_session`).
    """
    if is_sqlite(engine.url.render_as_string()):
        return AlchemySql(engine)
    pool = await asyncpg.create_pool(
        asyncpg_dsn(engine.url), min_size=0, max_size=max_size, init=_setup_connection, reset=_keep_session
    )
    return AsyncpgSql(pool, acquire_timeout=acquire_timeout)
