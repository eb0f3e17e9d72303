from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.repository import TenantRepository
from app.models import Credential, CredentialSetting


class CredentialRepository(TenantRepository[Credential]):
    model = Credential

    async def all_by_name(self) -> list[Credential]:
        return await self.all(self.readable().order_by(Credential.name))

    async def named(self, name: str) -> Credential | None:
        return await self.first(self.readable().where(Credential.name == name).with_for_update())

    async def remove(self, name: str) -> bool:
        result = await self.session.execute(
            delete(Credential).where(Credential.tenant_id == self.tenant_id, Credential.name == name)
        )
        return bool(getattr(result, "rowcount", 0))

    async def setting(self) -> CredentialSetting | None:
        stmt = select(CredentialSetting).where(CredentialSetting.tenant_id == self.tenant_id)
        row: CredentialSetting | None = (await self.session.execute(stmt)).scalars().first()
        return row


class SealedCredentials:
    """The key rotation's statements: an operator command across every tenant, on a connection."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def key_ids(self) -> set[str]:
        """The ids of the keys some stored credential is sealed under."""
        return set((await self.conn.execute(select(Credential.key_id).distinct())).scalars())

    async def not_under(self, key_id: str, *, after: uuid.UUID | None, limit: int) -> Sequence[Row[Any]]:
        """Up to `limit` credentials not sealed under `key_id`, in id order after `after`."""
        stmt = select(Credential).where(Credential.key_id != key_id).order_by(Credential.id).limit(limit)
        if after is not None:
            stmt = stmt.where(Credential.id > after)
        return (await self.conn.execute(stmt)).all()

    async def reseal(self, credential_id: uuid.UUID, *, was: str, key_id: str, blob: bytes) -> int:
        """Store the credential sealed anew, only if it still carries the key it was read with (1), else 0."""
        result = await self.conn.execute(
            update(Credential)
            .where(Credential.id == credential_id, Credential.key_id == was)
            .values(key_id=key_id, sealed_key=blob)
        )
        return int(getattr(result, "rowcount", 0))
