"""What a running turn reads of its attachments, on PostgreSQL and SQLite, from the row or the store dir."""

from __future__ import annotations

import uuid
from pathlib import Path

from sqlalchemy import insert

from app.core.sql import Query, Sql
from app.files.store import FileContents, FileStore
from app.models import File
from app.models.base import utcnow

ROW = {"owner_sub": "alice", "name": "a.txt", "content_type": "text/plain", "size": 2, "sha256": "0" * 64}


async def stored(db: Sql, tenant: str, content: bytes | None) -> str:
    file_id = uuid.uuid4()
    values = {**ROW, "id": file_id, "tenant_id": tenant, "content": content, "created_at": utcnow()}
    await db.execute(Query(insert(File).values(values)))
    return str(file_id)


async def test_the_bytes_of_the_tenants_existing_files_are_read_by_id(db: Sql) -> None:
    mine = await stored(db, "t1", b"hi")
    theirs = await stored(db, "t2", b"no")

    found = await FileContents(db, FileStore(None)).read("t1", [mine, theirs, str(uuid.uuid4()), mine])

    assert found == {mine: b"hi"}


async def test_with_a_store_dir_the_bytes_come_from_the_file_named_by_the_id(db: Sql, tmp_path: Path) -> None:
    on_disk, gone = await stored(db, "t1", None), await stored(db, "t1", None)
    (tmp_path / on_disk).write_bytes(b"disk")

    assert await FileContents(db, FileStore(tmp_path)).read("t1", [on_disk, gone]) == {on_disk: b"disk"}
