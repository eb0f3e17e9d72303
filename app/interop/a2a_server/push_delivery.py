"""What an A2A push notification sends: the task as `tasks/get` shows it to its owner when the
notification leaves (as the SDK's own sender does), with the client's token in
`X-A2A-Notification-Token` and its credentials as `Authorization` for a Bearer or Basic scheme.

The delivery worker (app/webhooks/worker.py) calls it for each attempt; the rest (SSRF check, bounded
POST, retries) is the webhooks'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.auth.principal import Principal
from app.container import Container
from app.interop.a2a_server import tasks
from app.interop.a2a_server.push import open_secrets
from app.interop.door import Door
from app.webhooks.worker import Request

TOKEN_HEADER = "X-A2A-Notification-Token"
AUTHORIZATION_SCHEMES = {"bearer": "Bearer", "basic": "Basic"}


def headers_of(secrets: Mapping[str, str], schemes: list[str] | None) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if "token" in secrets:
        headers[TOKEN_HEADER] = secrets["token"]
    scheme = AUTHORIZATION_SCHEMES.get((schemes or [""])[0].lower())
    if scheme is not None and "credentials" in secrets:
        headers["authorization"] = f"{scheme} {secrets['credentials']}"
    return headers


class PushTasks:
    def __init__(self, container: Container) -> None:
        self.container = container

    async def request(self, delivery: Mapping[str, Any], config: Mapping[str, Any]) -> Request:
        secrets = open_secrets(
            self.container.webhook_secrets,
            config["tenant_id"],
            config["id"],
            config["secret_key_id"],
            config["secret_sealed"],
        )
        owner = Principal(sub=config["owner_sub"], tenant_id=config["tenant_id"])
        task = await tasks.current(Door(self.container, owner, "a2a"), config["turn_id"])
        body = task.model_dump_json(by_alias=True, exclude_none=True).encode()
        return Request(body, headers_of(secrets, config["auth_schemes"]))
