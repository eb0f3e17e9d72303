"""Tenant provider keys (BYOK): stored encrypted, read back only as provider, base_url, last 4 and
fingerprint."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.core.outbound import OutboundBlocked, check_outbound_url
from app.credentials import schemas
from app.credentials.repository import CredentialRepository
from app.credentials.sealing import fingerprint, last4, seal_key
from app.errors import Conflict, InvalidInput, NotFound
from app.models import Credential, CredentialSetting
from app.models.base import utcnow
from app.secrets.box import SecretBox


class CredentialService:
    def __init__(self, db: AsyncSession, principal: Principal, box: SecretBox, allowed_hosts: Sequence[str]) -> None:
        self.db = db
        self.tenant_id = principal.tenant_id
        self.box = box
        self.allowed_hosts = list(allowed_hosts)
        self.credentials = CredentialRepository(db, principal.tenant_id)

    async def list(self) -> schemas.CredentialPage:
        rows = await self.credentials.all_by_name()
        setting = await self.credentials.setting()
        return schemas.CredentialPage(items=[_view(row) for row in rows], byok_only=bool(setting and setting.byok_only))

    async def put(self, name: str, body: schemas.CredentialPut) -> tuple[schemas.CredentialView, bool]:
        """Create or replace; True when it was created."""
        if body.base_url:
            try:
                await check_outbound_url(body.base_url, self.allowed_hosts)
            except OutboundBlocked as exc:
                raise InvalidInput(str(exc), field="body.base_url") from None
        api_key = body.api_key.get_secret_value()
        keyring = await self.box.current()
        sealed = seal_key(
            keyring, api_key, tenant_id=self.tenant_id, name=name, provider=body.provider, base_url=body.base_url
        )
        row = await self.credentials.named(name)
        created = row is None
        if row is None:
            row = Credential(tenant_id=self.tenant_id, name=name)
            self.db.add(row)
        row.provider = body.provider
        row.base_url = body.base_url
        row.key_id = sealed.key_id
        row.sealed_key = sealed.blob
        row.last4 = last4(api_key)
        row.fingerprint = fingerprint(api_key)
        row.updated_at = utcnow()
        try:
            await self.db.flush()
        except IntegrityError:
            raise Conflict(f"Credential {name!r} was written concurrently; retry") from None
        await self.db.refresh(row)
        return _view(row), created

    async def delete(self, name: str) -> None:
        if not await self.credentials.remove(name):
            raise NotFound(f"Credential {name!r} not found")

    async def update_settings(self, body: schemas.CredentialSettingsUpdate) -> schemas.CredentialPage:
        setting = await self.credentials.setting()
        if setting is None:
            self.db.add(CredentialSetting(tenant_id=self.tenant_id, byok_only=body.byok_only, updated_at=utcnow()))
        else:
            setting.byok_only = body.byok_only
            setting.updated_at = utcnow()
        await self.db.flush()
        return await self.list()


def _view(row: Credential) -> schemas.CredentialView:
    return schemas.CredentialView(
        name=row.name,
        provider=row.provider,  # type: ignore[arg-type]
        base_url=row.base_url,
        last4=row.last4,
        fingerprint=row.fingerprint,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
