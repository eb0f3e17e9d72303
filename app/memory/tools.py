"""`builtin:memory`: the tools `memory_put`, `memory_get` and `memory_search` over the long-term
memory store, for one turn's user and agent.

`scope: "user"` (the default) is the facts kept for the session's owner across sessions and
agents; `scope: "agent"` is the agent's memory shared by all its users. Calls pass the policy gate
like every tool (a rule on `memory_put` can deny or require approval). Bad arguments come back as
error results the model can correct; nothing here raises to the loop.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.db import unit_of_work
from app.errors import InvalidInput
from app.memory import schemas
from app.memory.service import MemoryStore, agent_scope, user_scope
from app.models import MemoryItem
from app.providers.base import ToolSpec
from app.tools.base import ToolResult

SEARCH_LIMIT = 10
_NAMESPACE = re.compile(schemas.NAMESPACE_PATTERN)
_KEY = re.compile(schemas.KEY_PATTERN)
_SCOPE = {
    "type": "string",
    "enum": ["user", "agent"],
    "description": "user (default): this user's memory; agent: shared by the agent's users",
}  # noqa: E501
_NAMESPACE_ARG = {"type": "string", "pattern": schemas.NAMESPACE_PATTERN, "description": "e.g. preferences"}
_KEY_ARG = {"type": "string", "pattern": schemas.KEY_PATTERN}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


MEMORY_TOOL_SPECS = (
    ToolSpec(
        name="memory_put",
        description="Remember a fact (any JSON value up to 64 KiB) under a namespace and key, replacing an old one.",
        input_schema=_schema(
            {"namespace": _NAMESPACE_ARG, "key": _KEY_ARG, "value": {}, "scope": _SCOPE}, ["namespace", "key", "value"]
        ),
    ),
    ToolSpec(
        name="memory_get",
        description="Recall the fact stored under a namespace and key.",
        input_schema=_schema({"namespace": _NAMESPACE_ARG, "key": _KEY_ARG, "scope": _SCOPE}, ["namespace", "key"]),
    ),
    ToolSpec(
        name="memory_search",
        description="Find remembered facts in a namespace whose key or value contains every word of the query.",
        input_schema=_schema(
            {
                "namespace": _NAMESPACE_ARG,
                "query": {"type": "string", "maxLength": schemas.MAX_QUERY_CHARS},
                "scope": _SCOPE,
            },
            ["namespace", "query"],
        ),
    ),
)
MEMORY_TOOL_NAMES = frozenset(spec.name for spec in MEMORY_TOOL_SPECS)


class _BadArguments(Exception):
    pass


class MemoryTools:
    """The memory tools of one turn: a tenant, the user the agent acts for, the agent."""

    specs = MEMORY_TOOL_SPECS

    def __init__(
        self, session_factory: async_sessionmaker[AsyncSession], *, tenant_id: str, user_sub: str, agent_id: uuid.UUID
    ) -> None:
        self._sessions = session_factory
        self._tenant_id = tenant_id
        self._scopes = {"user": user_scope(user_sub), "agent": agent_scope(agent_id)}
        self._handlers: dict[str, Callable[[MemoryStore, dict[str, Any]], Awaitable[str]]] = {
            "memory_put": self._put,
            "memory_get": self._get,
            "memory_search": self._search,
        }

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        handler = self._handlers.get(name)
        if handler is None:
            return ToolResult(content=f"unknown memory tool {name!r}", is_error=True)
        try:
            async with unit_of_work(self._sessions) as db:
                return ToolResult(content=await handler(MemoryStore(db, self._tenant_id), arguments))
        except (_BadArguments, InvalidInput) as exc:
            return ToolResult(content=str(exc), is_error=True)

    def _where(self, arguments: dict[str, Any], allowed: set[str]) -> tuple[str, str]:
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            raise _BadArguments(f"unexpected argument(s): {', '.join(unknown)}")
        scope = arguments.get("scope", "user")
        if scope not in self._scopes:
            raise _BadArguments("scope must be 'user' or 'agent'")
        namespace = arguments.get("namespace")
        if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
            raise _BadArguments(f"namespace must match {schemas.NAMESPACE_PATTERN}")
        return self._scopes[scope], namespace

    @staticmethod
    def _key(arguments: dict[str, Any]) -> str:
        key = arguments.get("key")
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise _BadArguments(f"key must match {schemas.KEY_PATTERN}")
        return key

    async def _put(self, store: MemoryStore, arguments: dict[str, Any]) -> str:
        scope, namespace = self._where(arguments, {"namespace", "key", "value", "scope"})
        key = self._key(arguments)
        if "value" not in arguments:
            raise _BadArguments("missing required argument 'value'")
        _, created = await store.put(scope, namespace, key, arguments["value"])
        return f"{'stored' if created else 'replaced'} {namespace}/{key}"

    async def _get(self, store: MemoryStore, arguments: dict[str, Any]) -> str:
        scope, namespace = self._where(arguments, {"namespace", "key", "scope"})
        key = self._key(arguments)
        item = await store.get(scope, namespace, key)
        return f"nothing stored under {namespace}/{key}" if item is None else _dump(item)

    async def _search(self, store: MemoryStore, arguments: dict[str, Any]) -> str:
        scope, namespace = self._where(arguments, {"namespace", "query", "scope"})
        query = arguments.get("query")
        if not isinstance(query, str) or len(query) > schemas.MAX_QUERY_CHARS:
            raise _BadArguments(f"query must be a string of at most {schemas.MAX_QUERY_CHARS} characters")
        found = await store.search(scope, namespace, query, limit=SEARCH_LIMIT)
        return orjson.dumps([{"key": i.key, "value": i.value} for i in found]).decode()


def _dump(item: MemoryItem) -> str:
    return orjson.dumps({"key": item.key, "value": item.value, "updated_at": item.updated_at.isoformat()}).decode()
