from __future__ import annotations

from sqlalchemy import delete, select

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
