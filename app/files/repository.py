from __future__ import annotations

import uuid

from sqlalchemy import Select, exists, select, update

from app.auth.principal import Principal
from app.core.repository import TenantRepository
from app.models import ACTIVE_STATUSES, File, Turn


class FileRepository(TenantRepository[File]):
    """Files visible to a principal: its own, or every one of the tenant for an admin (like sessions)."""

    model = File

    def visible(self, principal: Principal) -> Select[tuple[File]]:
        return self.owned(principal.owner_filter)

    async def get(self, principal: Principal, file_id: uuid.UUID) -> File | None:
        return await self.first(self.visible(principal).where(File.id == file_id))

    async def in_use(self, file: File) -> bool:
        """Whether a turn of the session that uses the file is running or waiting for approvals."""
        if file.session_id is None:
            return False
        active = select(Turn.id).where(
            Turn.tenant_id == self.tenant_id, Turn.session_id == file.session_id, Turn.status.in_(ACTIVE_STATUSES)
        )
        return bool(await self.session.scalar(select(exists(active))))

    async def tie_to_session(self, file_ids: list[uuid.UUID], session_id: uuid.UUID) -> None:
        """Files not yet tied to a session go with this one (retention deletes them with it)."""
        await self.session.execute(
            update(File)
            .where(File.tenant_id == self.tenant_id, File.id.in_(file_ids), File.session_id.is_(None))
            .values(session_id=session_id)
        )

    async def delete(self, file: File) -> None:
        await self.session.delete(file)
        await self.session.flush()
