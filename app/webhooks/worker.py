"""The delivery worker: drains the outbox (`webhook_deliveries`), once per delivery across replicas.

Every `poll` seconds (or when woken) it claims due deliveries in one statement — on PostgreSQL
`FOR UPDATE SKIP LOCKED`, so two replicas never claim the same row — by moving their
`next_attempt_at` past the claim's lease and counting the attempt. Then it POSTs each, signed
(Standard Webhooks), with a bounded time, and records the outcome: a 2xx ends it (`delivered`);
anything else is retried with exponential back-off until the retry window after the event has
passed (`failed`). A replica that dies mid-attempt leaves the row claimed until the lease ends; then
another one tries again with the same `webhook-id`, so a receiver that got it dedupes.

An A2A push notification is a delivery of the same outbox whose target is a task's push config
instead of a webhook: the same claim, SSRF check, bounded POST, retries and settle; only its request
is made elsewhere (`PushRequests`, app/interop/a2a_server/push_delivery.py): the task as JSON with
its client's token, instead of the signed event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.logs import get_logger
from app.core.outbound import OutboundBlocked, check_outbound_url
from app.core.sealing import SealedSecret, SecretSealer
from app.models.base import utcnow
from app.settings import WebhookSettings
from app.webhooks.repository import Outbox
from app.webhooks.service import secret_binding
from app.webhooks.signing import secret_key, signed_headers

log = get_logger("agent_runtime.webhooks")
BATCH = 20
MAX_ERROR_CHARS = 300
FIRST_RETRY_SECONDS = 5.0
MAX_RETRY_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    allowed_hosts: Sequence[str]
    timeout: float
    retry_window: float
    poll: float
    first_retry: float = FIRST_RETRY_SECONDS
    max_retry: float = MAX_RETRY_SECONDS

    @classmethod
    def of(cls, settings: WebhookSettings) -> WorkerConfig:
        return cls(
            allowed_hosts=settings.allowed_hosts,
            timeout=settings.timeout_seconds,
            retry_window=settings.retry_window_seconds,
            poll=settings.poll_seconds,
            first_retry=settings.retry_first_seconds,
        )

    @property
    def lease(self) -> timedelta:
        """How long a claimed delivery stays invisible to other replicas: longer than any attempt."""
        return timedelta(seconds=2 * self.timeout + 30)


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Request:
    body: bytes
    headers: dict[str, str]


class PushRequests(Protocol):
    """What an A2A push notification delivery sends to its config's URL."""

    async def request(self, delivery: Mapping[str, Any], config: Mapping[str, Any]) -> Request: ...


class PushUnavailable(Exception):
    """A push delivery met by a worker that sends no push notifications (WEBHOOK_ENABLED is off)."""


def retry_delay(attempts: int, config: WorkerConfig) -> float:
    """5 s, 10 s, 20 s … doubling after each failed attempt, at most `max_retry`."""
    doublings = min(max(attempts - 1, 0), 30)
    return float(min(config.first_retry * (1 << doublings), config.max_retry))


def _target_id(delivery: Mapping[str, Any]) -> uuid.UUID:
    return delivery["webhook_id"] or delivery["push_config_id"]  # type: ignore[no-any-return]


class DeliveryWorker:
    def __init__(
        self,
        engine: AsyncEngine,
        http: httpx.AsyncClient,
        sealer: SecretSealer,
        config: WorkerConfig,
        push: PushRequests | None = None,
    ) -> None:
        self.engine = engine
        self.http = http
        self.sealer = sealer
        self.config = config
        self.push = push
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="webhook-deliveries")

    def wake(self) -> None:
        """Look for due deliveries now (an outbox row was just written by this process)."""
        self._wake.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                while await self.run_once() >= BATCH:
                    pass
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("webhook delivery pass failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.poll):
                    await self._wake.wait()
            self._wake.clear()

    async def run_once(self) -> int:
        """Claim and attempt the due deliveries; returns how many were claimed."""
        async with self.engine.begin() as conn:
            claimed = await Outbox(conn).claim(utcnow(), lease=self.config.lease, limit=BATCH)
        if not claimed:
            return 0
        targets = await self._targets(claimed)
        outcomes = await asyncio.gather(*(self._attempt(row, targets.get(_target_id(row))) for row in claimed))
        async with self.engine.begin() as conn:
            outbox = Outbox(conn)
            for row, outcome in zip(claimed, outcomes, strict=True):
                await outbox.settle(row["id"], self._settled(row, outcome, utcnow()))
        return len(claimed)

    async def _targets(self, claimed: list[dict[str, Any]]) -> dict[uuid.UUID, dict[str, Any]]:
        """The webhooks and push configs the claimed deliveries go to, by id (one read per kind present)."""
        hook_ids = {row["webhook_id"] for row in claimed if row["webhook_id"] is not None}
        push_ids = {row["push_config_id"] for row in claimed if row["push_config_id"] is not None}
        async with self.engine.connect() as conn:
            outbox = Outbox(conn)
            targets = await outbox.webhooks(hook_ids) if hook_ids else {}
            if push_ids:
                targets.update(await outbox.push_configs(push_ids))
        return targets

    async def _attempt(self, delivery: dict[str, Any], target: dict[str, Any] | None) -> Outcome:
        if target is None or target["tenant_id"] != delivery["tenant_id"]:
            kind = "webhook" if delivery["push_config_id"] is None else "push notification config"
            return Outcome(ok=False, error=f"the {kind} was deleted")
        try:
            await check_outbound_url(target["url"], self.config.allowed_hosts)
            request = await self._request(delivery, target)
            async with asyncio.timeout(self.config.timeout):
                async with self.http.stream(
                    "POST",
                    target["url"],
                    content=request.body,
                    headers=request.headers,
                    timeout=self.config.timeout,
                    follow_redirects=False,
                ) as response:
                    status = response.status_code
        except OutboundBlocked as exc:
            return Outcome(ok=False, error=f"blocked: {exc}")
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            return Outcome(ok=False, error=type(exc).__name__)
        except Exception as exc:  # a secret that no longer opens (key removed), a task gone: keep the row, say why
            log.warning(
                "webhook delivery could not be prepared", delivery_id=str(delivery["id"]), error=type(exc).__name__
            )
            return Outcome(ok=False, error=type(exc).__name__)
        if 200 <= status < 300:
            return Outcome(ok=True, status=status)
        return Outcome(ok=False, status=status, error=f"HTTP {status}")

    async def _request(self, delivery: dict[str, Any], target: dict[str, Any]) -> Request:
        if delivery["push_config_id"] is not None:
            if self.push is None:
                raise PushUnavailable
            return await self.push.request(delivery, target)
        sealed = SealedSecret(target["secret_key_id"], target["secret_sealed"])
        key = secret_key(self.sealer.open(sealed, secret_binding(target["tenant_id"], target["id"])))
        body = delivery["payload"].encode()
        return Request(body, signed_headers(key, f"msg_{delivery['id'].hex}", int(time.time()), body))

    def _settled(self, delivery: dict[str, Any], outcome: Outcome, now: datetime) -> dict[str, Any]:
        """The delivery's columns after this attempt: delivered, due again after a back-off, or failed."""
        values: dict[str, Any] = {"response_status": outcome.status, "last_error": outcome.error}
        if outcome.ok:
            values.update(status="delivered", delivered_at=now, last_error=delivery["last_error"])
        else:
            next_at = now + timedelta(seconds=retry_delay(delivery["attempts"], self.config))
            if next_at > delivery["created_at"] + timedelta(seconds=self.config.retry_window):
                values.update(status="failed")
            else:
                values.update(next_attempt_at=next_at)
            if outcome.error is not None:
                values["last_error"] = outcome.error[:MAX_ERROR_CHARS]
        return values
