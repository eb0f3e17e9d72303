from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
"""Lower-case letters, digits, `_` and `-`: no dots, slashes or escapes, so no path tricks."""
KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
MAX_VALUE_BYTES = 65_536
MAX_QUERY_CHARS = 256


class MemoryPut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any
    """Any JSON value up to 64 KiB."""


class MemoryItemOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    namespace: str
    key: str
    scope: str
    """`user:{sub}` (the caller's own facts) or `agent:{agent_id}` (shared by the agent's users)."""
    value: Any
    created_at: datetime
    updated_at: datetime


class MemoryPage(BaseModel):
    items: list[MemoryItemOut]
    next_cursor: str | None = None
