"""A task's A2A push notification configs: set, read, listed and deleted for its JSON-RPC client.

A config's URL is judged as a webhook's (app/core/outbound.py, `WEBHOOK_ALLOWED_HOSTS`) when it is
set, and again before every delivery (app/webhooks/worker.py). Its `token` and
`authentication.credentials` are sealed with the webhook secrets' key, bound to the row, and never
read back: get and list show the id, the URL and the authentication schemes only.

A config is stored after its task began (a message's config registers on the task the message made).
The task's next state change is delivered by the write that stores it, which reads the configs of
its task in the same statement; a change stored before the config committed is caught up on right
after, in a transaction that first locks the turn's row and so waits for a write under way
(`PushConfigRepository.catch_up`). What is left is a write whose statement took its snapshot before
the config's commit and had not yet reached its fence lock when the catch-up took the row: a window
inside one statement, microseconds wide; that one state is not pushed, the next one is
(docs/decisions.md).
"""

from __future__ import annotations

import re
import uuid

import orjson
from a2a.types import PushNotificationAuthenticationInfo, PushNotificationConfig

from app.auth.principal import Principal
from app.container import Container
from app.core.db import unit_of_work
from app.core.outbound import OutboundBlocked, check_outbound_url
from app.core.sealing import SealedSecret, SecretSealer
from app.interop.a2a_server.errors import invalid
from app.interop.a2a_server.push_repository import PushConfigRepository
from app.models import A2aPushConfig

MAX_URL_CHARS = 2048
MAX_ID_CHARS = 256
MAX_SCHEMES = 8
HEADER_VALUE = re.compile(r"[\x21-\x7e]{1,4096}")
"""A token or credentials travel in a header: visible ASCII without spaces, bounded."""


def secret_binding(tenant_id: str, config_row_id: uuid.UUID) -> bytes:
    return f"a2a-push:{tenant_id}:{config_row_id}".encode()


def sealed_secrets(config: PushNotificationConfig) -> dict[str, str]:
    """The parts of a config stored sealed, those it has."""
    secrets = {"token": config.token}
    if config.authentication is not None:
        secrets["credentials"] = config.authentication.credentials
    return {name: value for name, value in secrets.items() if value is not None}


def open_secrets(
    sealer: SecretSealer, tenant_id: str, row_id: uuid.UUID, key_id: str | None, blob: bytes | None
) -> dict[str, str]:
    if key_id is None or blob is None:
        return {}
    opened: dict[str, str] = orjson.loads(sealer.open(SealedSecret(key_id, blob), secret_binding(tenant_id, row_id)))
    return opened


def view_of(row: A2aPushConfig) -> PushNotificationConfig:
    schemes = row.auth_schemes
    authentication = PushNotificationAuthenticationInfo(schemes=schemes) if schemes else None
    return PushNotificationConfig(id=row.config_id, url=row.url, authentication=authentication)


class PushConfigs:
    def __init__(self, container: Container, principal: Principal) -> None:
        self.factory = container.session_factory
        self.sealer = container.webhook_secrets
        self.allowed_hosts = container.settings.webhooks.allowed_hosts
        self.principal = principal

    async def check(self, config: PushNotificationConfig) -> None:
        """Refuse (invalid params) a config this service would not deliver to or could not store."""
        if len(config.url) > MAX_URL_CHARS:
            raise invalid(f"pushNotificationConfig.url: at most {MAX_URL_CHARS} characters")
        if config.id is not None and not 0 < len(config.id) <= MAX_ID_CHARS:
            raise invalid(f"pushNotificationConfig.id: 1 to {MAX_ID_CHARS} characters")
        if config.authentication is not None and len(config.authentication.schemes) > MAX_SCHEMES:
            raise invalid(f"pushNotificationConfig.authentication.schemes: at most {MAX_SCHEMES}")
        for name, value in sealed_secrets(config).items():
            if not HEADER_VALUE.fullmatch(value):
                raise invalid(f"pushNotificationConfig {name}: 1 to 4096 visible ASCII characters, no spaces")
        try:
            await check_outbound_url(config.url, self.allowed_hosts)
        except OutboundBlocked as exc:
            raise invalid(f"pushNotificationConfig.url: {exc}") from None

    async def save(self, turn_id: uuid.UUID, config: PushNotificationConfig) -> PushNotificationConfig:
        """Store `config` (checked) on the task, replacing the one of the same id (default: the task's id).
        A task whose state already changed is delivered that state at once."""
        tenant_id = self.principal.tenant_id
        async with unit_of_work(self.factory) as db:
            repository = PushConfigRepository(db, tenant_id)
            config_id = config.id or str(turn_id)
            row = await repository.get(turn_id, config_id)
            if row is None:
                row = A2aPushConfig(
                    id=uuid.uuid4(), tenant_id=tenant_id, turn_id=turn_id, config_id=config_id,
                    created_by=self.principal.sub,
                )  # fmt: skip
                db.add(row)
            row.url = config.url
            row.auth_schemes = list(config.authentication.schemes) if config.authentication else None
            secrets = sealed_secrets(config)
            sealed = (
                self.sealer.seal(orjson.dumps(secrets).decode(), secret_binding(tenant_id, row.id)) if secrets else None
            )
            row.secret_key_id = sealed.key_id if sealed else None
            row.secret_sealed = sealed.blob if sealed else None
            view, row_id = view_of(row), row.id
        async with unit_of_work(self.factory) as db:
            await PushConfigRepository(db, tenant_id).catch_up(row_id, turn_id)
        return view

    async def get(self, turn_id: uuid.UUID, config_id: str | None) -> PushNotificationConfig | None:
        """The config of that id, or with none the task's first."""
        async with unit_of_work(self.factory) as db:
            repository = PushConfigRepository(db, self.principal.tenant_id)
            if config_id is not None:
                row = await repository.get(turn_id, config_id)
                return None if row is None else view_of(row)
            rows = await repository.of_task(turn_id)
            return view_of(rows[0]) if rows else None

    async def list(self, turn_id: uuid.UUID) -> list[PushNotificationConfig]:
        async with unit_of_work(self.factory) as db:
            return [view_of(row) for row in await PushConfigRepository(db, self.principal.tenant_id).of_task(turn_id)]

    async def delete(self, turn_id: uuid.UUID, config_id: str) -> None:
        """Idempotent, as the SDK's own store: deleting a config the task lacks is no error."""
        async with unit_of_work(self.factory) as db:
            await PushConfigRepository(db, self.principal.tenant_id).delete(turn_id, config_id)
