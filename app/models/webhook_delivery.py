from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime


class WebhookDelivery(IdMixin, TenantMixin, CreatedMixin, Base):
    """The outbox: one row per (subscription, event), written with the event; the worker drains it.

    A subscription is a webhook (`webhook_id`) or an A2A push notification config of the event's
    task (`push_config_id`), never both.

    `status` is `pending` until a 2xx (`delivered`) or the retry window ends (`failed`); `payload` is
    the event's JSON exactly as it was streamed.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("webhook_id", "turn_id", "seq"),
        UniqueConstraint("push_config_id", "turn_id", "seq"),
        CheckConstraint("(webhook_id IS NULL) <> (push_config_id IS NULL)", name="one_target"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_webhook_created", "webhook_id", "created_at"),
    )

    webhook_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    push_config_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("a2a_push_configs.id", ondelete="CASCADE"))
    turn_id: Mapped[uuid.UUID] = mapped_column(Uuid())
    seq: Mapped[int] = mapped_column(Integer)
    event_type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    response_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
