"""Async engine and sessions. The request owns the transaction (see `unit_of_work`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry


def json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def create_engine(
    url: str, *, pool_size: int = 20, max_overflow: int = 20, pool_timeout: float = 60.0, echo: bool = False
) -> AsyncEngine:
    kwargs: dict[str, Any] = {"echo": echo, "json_serializer": json_text, "json_deserializer": orjson.loads}
    if is_sqlite(url):
        kwargs["connect_args"] = {"timeout": 30}
    else:
        kwargs.update(pool_size=pool_size, max_overflow=max_overflow, pool_timeout=pool_timeout, pool_pre_ping=False)
    engine = create_async_engine(url, **kwargs)
    if is_sqlite(url):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


@asynccontextmanager
async def unit_of_work(factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One transaction: commit on success, roll back on any error."""
    async with factory() as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        await session.commit()
