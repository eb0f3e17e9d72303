"""Memory search reads only the caller's tenant, scope and namespace, in one limited statement, on
both backends: another tenant's growing memory never enters the search (SQLite used to load every
tenant's full-text hits, then filter them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.memory.service import MemoryStore


async def test_a_search_is_one_statement_scoped_by_tenant_and_limited(engine: AsyncEngine) -> None:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions.begin() as db:
        for n in range(60):
            await MemoryStore(db, "crowded").put("user:bob", "notes", f"k{n:03}", {"text": f"weekly report {n}"})
        for key in ("a", "b", "c"):
            await MemoryStore(db, "quiet").put("user:alice", "notes", key, {"text": f"weekly report {key}"})
        await MemoryStore(db, "quiet").put("user:alice", "other", "z", {"text": "weekly report elsewhere"})

    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        async with sessions.begin() as db:
            found = await MemoryStore(db, "quiet").search("user:alice", "notes", "weekly report", limit=2)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)

    assert len(found) == 2
    assert {item.tenant_id for item in found} == {"quiet"}
    assert {item.key for item in found} <= {"a", "b", "c"}
    searches = [s for s in statements if "memory_items" in s or "memory_search" in s]
    assert len(searches) == 1, searches
    assert "tenant_id" in searches[0]
    assert "LIMIT" in searches[0].upper()
