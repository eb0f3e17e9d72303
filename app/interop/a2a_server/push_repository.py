"""The statements of A2A push notification configs: a task's configs, and the delivery that catches
a config registered after its task's state changed up with that state."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.core.repository import TenantRepository
from app.models import A2aPushConfig, Turn, TurnEvent, WebhookDelivery
from app.models.a2a_push_config import PUSHED_EVENT
from app.models.base import utcnow

RESTLESS = ("queued", "running")
"""A task in these states has no state change to catch up on: its next one is delivered by its write."""


class PushConfigRepository(TenantRepository[A2aPushConfig]):
    model = A2aPushConfig

    async def of_task(self, turn_id: uuid.UUID) -> list[A2aPushConfig]:
        stmt = self.readable().where(A2aPushConfig.turn_id == turn_id)
        return await self.all(stmt.order_by(A2aPushConfig.created_at, A2aPushConfig.id))

    async def get(self, turn_id: uuid.UUID, config_id: str) -> A2aPushConfig | None:
        stmt = self.readable().where(A2aPushConfig.turn_id == turn_id, A2aPushConfig.config_id == config_id)
        return await self.first(stmt)

    async def delete(self, turn_id: uuid.UUID, config_id: str) -> bool:
        stmt = delete(A2aPushConfig).where(
            A2aPushConfig.tenant_id == self.tenant_id,
            A2aPushConfig.turn_id == turn_id,
            A2aPushConfig.config_id == config_id,
        )
        return bool((await self.session.execute(stmt)).rowcount)  # type: ignore[attr-defined]

    async def catch_up(self, config_id: uuid.UUID, turn_id: uuid.UUID) -> None:
        """A delivery of the task's latest `turn.ended` to the config `config_id` (committed before this
        transaction began) while the task rests in that state, unless the write that stored the event
        already made it (same config, turn and seq).

        The turn's row is locked first: a turn write holds it `FOR SHARE` (its fence) until it commits,
        so a write that began before the config's commit, and so could not see the config, is waited
        for and its `turn.ended` read here; a later write reads the config itself."""
        locked = select(Turn.id).where(Turn.id == turn_id, Turn.tenant_id == self.tenant_id)
        if (await self.session.execute(locked.with_for_update(key_share=True))).first() is None:
            return
        latest = (
            await self.session.execute(
                select(TurnEvent.seq, TurnEvent.data)
                .join(Turn, Turn.id == TurnEvent.turn_id)
                .where(
                    TurnEvent.tenant_id == self.tenant_id,
                    TurnEvent.turn_id == turn_id,
                    TurnEvent.type == PUSHED_EVENT,
                    Turn.status.not_in(RESTLESS),
                )
                .order_by(TurnEvent.seq.desc())
                .limit(1)
            )
        ).first()
        if latest is None:
            return
        now = utcnow()
        row = {
            "id": uuid.uuid4(),
            "tenant_id": self.tenant_id,
            "push_config_id": config_id,
            "turn_id": turn_id,
            "seq": latest.seq,
            "event_type": PUSHED_EVENT,
            "payload": latest.data,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        }
        dialect_insert = pg_insert if self.session.get_bind().dialect.name == "postgresql" else sqlite_insert
        stmt = dialect_insert(WebhookDelivery).values(row)
        await self.session.execute(stmt.on_conflict_do_nothing(index_elements=["push_config_id", "turn_id", "seq"]))
