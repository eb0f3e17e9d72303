"""Memory items by (tenant, scope, namespace, key), and full-text search over them."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Select, column, delete, func, table, text

from app.core.repository import TenantRepository
from app.models import MemoryItem

_WORD = re.compile(r"\w+")
_FTS = table("memory_search", column("item_id"), column("rank"))
"""SQLite's FTS5 index of `memory_items.search_text` (kept by triggers, migration 0014)."""


class MemoryRepository(TenantRepository[MemoryItem]):
    model = MemoryItem

    def _in(self, scope: str, namespace: str) -> Select[tuple[MemoryItem]]:
        return self.readable().where(MemoryItem.scope == scope, MemoryItem.namespace == namespace)

    async def get(self, scope: str, namespace: str, key: str) -> MemoryItem | None:
        return await self.first(self._in(scope, namespace).where(MemoryItem.key == key))

    async def page(self, scope: str, namespace: str, *, limit: int, after: str | None) -> list[MemoryItem]:
        stmt = self._in(scope, namespace)
        if after is not None:
            stmt = stmt.where(MemoryItem.key > after)
        return await self.all(stmt.order_by(MemoryItem.key).limit(limit + 1))

    async def search(self, scope: str, namespace: str, query: str, *, limit: int) -> list[MemoryItem]:
        """Best matches first: every word of `query` must occur (PostgreSQL tsvector, SQLite FTS5). One
        statement filtered by tenant, scope and namespace and limited, so another tenant's matches are
        never read (SQLite once loaded every tenant's hits before filtering)."""
        words = _WORD.findall(query.lower())
        if not words:
            return []
        stmt = self._in(scope, namespace)
        if self.session.bind is not None and self.session.bind.dialect.name == "postgresql":
            vector = func.to_tsvector(text("'simple'"), MemoryItem.search_text)
            wanted = func.plainto_tsquery(text("'simple'"), " ".join(words))
            stmt = stmt.where(vector.op("@@")(wanted)).order_by(func.ts_rank(vector, wanted).desc(), MemoryItem.key)
        else:
            match = " ".join(f'"{word}"' for word in words)
            stmt = (
                stmt.join(_FTS, _FTS.c.item_id == MemoryItem.id)
                .where(text("memory_search MATCH :match").bindparams(match=match))
                .order_by(_FTS.c.rank, MemoryItem.key)
            )
        return await self.all(stmt.limit(limit))

    async def delete(self, scope: str, namespace: str, key: str) -> bool:
        stmt = delete(MemoryItem).where(
            MemoryItem.tenant_id == self.tenant_id,
            MemoryItem.scope == scope,
            MemoryItem.namespace == namespace,
            MemoryItem.key == key,
        )
        result: Any = await self.session.execute(stmt)
        return bool(result.rowcount)
