"""Where a file's bytes live: its row (`content`), or `FILE_STORE_DIR/<id>` when that is set.

Disk I/O runs in a worker thread so a large file never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import bindparam, select

from app.core.sql import Query, Sql
from app.models import File

CONTENT = Query(select(File.content).where(File.tenant_id == bindparam("tenant_id"), File.id == bindparam("file_id")))


class FileStore:
    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    @property
    def in_database(self) -> bool:
        return self.directory is None

    async def put(self, file_id: uuid.UUID, data: bytes) -> None:
        if self.directory is not None:
            await asyncio.to_thread(self._write, self.directory / str(file_id), data)

    async def get(self, file_id: uuid.UUID, stored: bytes | None) -> bytes | None:
        if self.directory is None:
            return stored
        path = self.directory / str(file_id)
        return await asyncio.to_thread(_read_or_none, path)

    async def remove(self, file_id: uuid.UUID) -> None:
        if self.directory is not None:
            await asyncio.to_thread((self.directory / str(file_id)).unlink, missing_ok=True)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(path)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


class FileContents:
    """What a running turn reads: the bytes of the files its prompt names (a deleted one is missing)."""

    def __init__(self, sql: Sql, store: FileStore) -> None:
        self.sql = sql
        self.store = store

    async def read(self, tenant_id: str, file_ids: Iterable[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for file_id in dict.fromkeys(file_ids):
            key = uuid.UUID(file_id)
            row = await self.sql.fetchrow(CONTENT, {"tenant_id": tenant_id, "file_id": key})
            if row is None:
                continue
            data = await self.store.get(key, row["content"])
            if data is not None:
                found[file_id] = data
        return found
