"""Long-term memory: facts kept across sessions, for one user or shared by an agent's users.

The HTTP API and the `builtin:memory` tools both go through `MemoryStore`, so the scope rules are
written once: a user reads and writes only their own `user:{sub}` scope; an agent's shared scope
(`agent:{agent_id}`) is readable by every user of the tenant and written by admins, or by the agent
itself through its tools (under the same policies as every tool call).
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.repository import AgentRepository
from app.auth.principal import Principal
from app.errors import Forbidden, InvalidInput, NotFound
from app.memory import schemas
from app.memory.repository import MemoryRepository
from app.models import MemoryItem
from app.models.base import utcnow

MAX_LIMIT = 100
MAX_SEARCH_TEXT = 65_536


def user_scope(sub: str) -> str:
    return f"user:{sub}"


def agent_scope(agent_id: uuid.UUID) -> str:
    return f"agent:{agent_id}"


class MemoryStore:
    """Reads and writes of one tenant's memory, scope already decided by the caller."""

    def __init__(self, db: AsyncSession, tenant_id: str) -> None:
        self.db = db
        self.tenant_id = tenant_id
        self.items = MemoryRepository(db, tenant_id)

    async def put(self, scope: str, namespace: str, key: str, value: Any) -> tuple[MemoryItem, bool]:
        """Store `value` (replacing an existing one); True when the item is new."""
        encoded = orjson.dumps(value)
        if len(encoded) > schemas.MAX_VALUE_BYTES:
            raise InvalidInput(
                f"A memory value may take at most {schemas.MAX_VALUE_BYTES} bytes as JSON, not {len(encoded)}",
                field="body.value",
            )
        search_text = " ".join([key, *_strings(value)])[:MAX_SEARCH_TEXT]
        item = await self.items.get(scope, namespace, key)
        if item is not None:
            item.value, item.search_text, item.updated_at = value, search_text, utcnow()
            await self.db.flush()
            return item, False
        item = MemoryItem(
            id=uuid.uuid4(), tenant_id=self.tenant_id, scope=scope, namespace=namespace, key=key,
            value=value, search_text=search_text,
        )  # fmt: skip
        return await self.items.add(item), True

    async def get(self, scope: str, namespace: str, key: str) -> MemoryItem | None:
        return await self.items.get(scope, namespace, key)

    async def search(self, scope: str, namespace: str, query: str, *, limit: int) -> list[MemoryItem]:
        return await self.items.search(scope, namespace, query, limit=limit)

    async def page(self, scope: str, namespace: str, *, limit: int, after: str | None) -> list[MemoryItem]:
        return await self.items.page(scope, namespace, limit=limit, after=after)

    async def delete(self, scope: str, namespace: str, key: str) -> bool:
        return await self.items.delete(scope, namespace, key)


class MemoryService:
    """The `/memory` resource for the calling user."""

    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.store = MemoryStore(db, principal.tenant_id)

    async def _scope(self, agent_id: uuid.UUID | None, *, write: bool) -> str:
        if agent_id is None:
            return user_scope(self.principal.sub)
        if await AgentRepository(self.db, self.principal.tenant_id).get(agent_id) is None:
            raise NotFound(f"Agent {agent_id} not found")
        if write and not self.principal.is_admin:
            raise Forbidden("Writing an agent's shared memory needs role admin")
        return agent_scope(agent_id)

    async def put(
        self, namespace: str, key: str, body: schemas.MemoryPut, agent_id: uuid.UUID | None
    ) -> tuple[schemas.MemoryItemOut, bool]:
        item, created = await self.store.put(await self._scope(agent_id, write=True), namespace, key, body.value)
        return schemas.MemoryItemOut.model_validate(item), created

    async def get(self, namespace: str, key: str, agent_id: uuid.UUID | None) -> schemas.MemoryItemOut:
        item = await self.store.get(await self._scope(agent_id, write=False), namespace, key)
        if item is None:
            raise NotFound(f"Memory item {namespace}/{key} not found")
        return schemas.MemoryItemOut.model_validate(item)

    async def list(
        self, namespace: str, agent_id: uuid.UUID | None, *, query: str | None, limit: int, cursor: str | None
    ) -> schemas.MemoryPage:
        scope = await self._scope(agent_id, write=False)
        if query:
            found = await self.store.search(scope, namespace, query, limit=limit)
            return schemas.MemoryPage(items=[schemas.MemoryItemOut.model_validate(i) for i in found])
        rows = await self.store.page(scope, namespace, limit=limit, after=cursor)
        more = len(rows) > limit
        rows = rows[:limit]
        return schemas.MemoryPage(
            items=[schemas.MemoryItemOut.model_validate(i) for i in rows],
            next_cursor=rows[-1].key if more else None,
        )

    async def delete(self, namespace: str, key: str, agent_id: uuid.UUID | None) -> None:
        if not await self.store.delete(await self._scope(agent_id, write=True), namespace, key):
            raise NotFound(f"Memory item {namespace}/{key} not found")


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys of objects included), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
