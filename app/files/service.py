"""Upload, read and delete files; resolve a turn's file parts (owned, of a type the provider takes)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.errors import AppError, Conflict, NotFound, PayloadTooLarge
from app.files.repository import FileRepository
from app.files.schemas import FileInfo
from app.files.sniff import UnsupportedType, sniff
from app.files.store import FileStore
from app.models import File
from app.models.base import utcnow

MAX_NAME_CHARS = 255


class UnsupportedMediaType(AppError):
    status, title, type_slug = 415, "Unsupported Media Type", "unsupported-media-type"


@dataclass(frozen=True, slots=True)
class Upload:
    name: str
    declared_type: str | None
    data: bytes


class FileService:
    def __init__(self, db: AsyncSession, principal: Principal, store: FileStore, *, max_bytes: int) -> None:
        self.repo = FileRepository(db, principal.tenant_id)
        self.principal = principal
        self.store = store
        self.max_bytes = max_bytes

    async def upload(self, upload: Upload) -> FileInfo:
        if len(upload.data) > self.max_bytes:
            raise PayloadTooLarge(f"The file exceeds {self.max_bytes} bytes (FILE_MAX_BYTES)")
        name = (upload.name or "upload").replace("\\", "/").rsplit("/", 1)[-1][:MAX_NAME_CHARS] or "upload"
        try:
            content_type = sniff(upload.data, declared=upload.declared_type, name=name)
        except UnsupportedType as exc:
            raise UnsupportedMediaType(str(exc)) from exc
        file = File(
            id=uuid.uuid4(),
            tenant_id=self.principal.tenant_id,
            owner_sub=self.principal.sub,
            name=name,
            content_type=content_type,
            size=len(upload.data),
            sha256=hashlib.sha256(upload.data).hexdigest(),
            content=upload.data if self.store.in_database else None,
            created_at=utcnow(),
        )
        await self.store.put(file.id, upload.data)
        return FileInfo.model_validate(await self.repo.add(file))

    async def get(self, file_id: uuid.UUID) -> File:
        file = await self.repo.get(self.principal, file_id)
        if file is None:
            raise NotFound(f"File {file_id} not found")
        return file

    async def content(self, file_id: uuid.UUID) -> tuple[File, bytes]:
        file = await self.get(file_id)
        data = await self.store.get(file.id, file.content)
        if data is None:
            raise NotFound(f"The content of file {file_id} is gone from the file store")
        return file, data

    async def delete(self, file_id: uuid.UUID) -> None:
        file = await self.get(file_id)
        if await self.repo.in_use(file):
            raise Conflict(f"File {file_id} is in use by a running turn; delete it once the turn has ended")
        await self.repo.delete(file)
        await self.store.remove(file.id)
