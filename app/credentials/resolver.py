"""Which key and base URL a turn's model calls use (DESIGN.md "Agent configuration").

Order: the credential the agent names (`model.credential`; if it is gone the turn fails, it never
falls back), else the tenant's credential named after the provider, else the process environment —
unless the tenant is BYOK-only (`PATCH /credentials {"byok_only": true}`), in which case a turn with
no credential of its tenant fails `provider_not_configured`. A credential's `base_url` is checked
against PROVIDER_ALLOWED_HOSTS again at every turn (DNS can change); the operator's own
`*_BASE_URL` settings are trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.outbound import OutboundBlocked, check_outbound_url
from app.core.sql import Row, Sql
from app.credentials.schemas import printable_ascii
from app.credentials.sealing import associated_data
from app.credentials.store import keys_of_arrays, tenant_keys
from app.providers.base import ProviderError
from app.providers.clients import Endpoint
from app.secrets.box import SecretBox
from app.secrets.keyring import Sealed, SecretUnreadable


@dataclass(frozen=True, slots=True)
class EnvironmentKey:
    """The operator's key and base URL of one provider (ANTHROPIC_*, OPENAI_*, GEMINI_*)."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None


def not_configured(message: str) -> ProviderError:
    return ProviderError("provider_not_configured", message)


class CredentialResolver:
    def __init__(
        self,
        sql: Sql,
        box: SecretBox,
        environment: Mapping[str, EnvironmentKey],
        allowed_hosts: Sequence[str],
    ) -> None:
        self._sql = sql
        self._box = box
        self._environment = dict(environment)
        self._allowed_hosts = list(allowed_hosts)

    async def resolve(
        self, tenant_id: str, model: Mapping[str, Any], keys: Mapping[str, Any] | None = None
    ) -> Endpoint:
        """`keys`: the tenant's keys as the turn's start read them with its session (`keys_of_arrays`);
        None: read them now."""
        provider = str(model["provider"])
        named = model.get("credential")
        found = await tenant_keys(self._sql, tenant_id, named, provider) if keys is None else keys_of_arrays(keys)
        if named:
            row = found.by_name.get(named)
            if row is None:
                raise not_configured(f"the credential {named!r} named by the agent does not exist")
            return await self._endpoint(row, tenant_id, provider)
        row = found.by_name.get(provider)
        if row is not None:
            return await self._endpoint(row, tenant_id, provider)
        env = self._environment.get(provider, EnvironmentKey())
        if not env.api_key:
            raise not_configured(f"no {provider} key: store a credential named {provider!r} or set the environment")
        if found.byok_only:
            raise not_configured(f"no {provider} credential, and this tenant uses only its own keys (byok_only)")
        return Endpoint(provider, env.api_key, env.base_url, source="environment")

    async def _endpoint(self, row: Row, tenant_id: str, provider: str) -> Endpoint:
        name = str(row["name"])
        if row["provider"] != provider:
            raise not_configured(f"the credential {name!r} is for {row['provider']}, the agent uses {provider}")
        base_url: str | None = row["base_url"]
        if base_url:
            try:
                await check_outbound_url(base_url, self._allowed_hosts)
            except OutboundBlocked as exc:
                raise not_configured(f"the base_url of credential {name!r} is refused: {exc}") from None
        try:
            api_key = await self._box.open(
                Sealed(str(row["key_id"]), bytes(row["sealed_key"])),
                associated_data(tenant_id, name, provider, base_url),
            )
        except SecretUnreadable as exc:
            raise not_configured(f"the credential {name!r} cannot be decrypted: {exc}") from None
        if not printable_ascii(api_key):
            raise not_configured(f"the key of credential {name!r} is not printable ASCII: store it again")
        env_base = self._environment.get(provider, EnvironmentKey()).base_url
        return Endpoint(provider, api_key, base_url or env_base, source=f"credential:{name}")
