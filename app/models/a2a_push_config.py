from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ForeignKey, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin

PUSHED_EVENT = "turn.ended"
"""The event on which a task's state changes (input-required, completed, failed, canceled): each one
stored is delivered to every push config of its task (app/runtime/store/outbox.py)."""


class A2aPushConfig(IdMixin, TenantMixin, CreatedMixin, Base):
    """An A2A client's push notification config on one task (a turn): where to POST the task when its
    state changes. `config_id` is the client's id for it (the task's id when it gave none).

    The client's `token` and `authentication.credentials` are stored sealed (`secret_sealed`, a JSON
    object of both), bound to the row; `auth_schemes` is not a secret.
    """

    __tablename__ = "a2a_push_configs"
    __table_args__ = (UniqueConstraint("turn_id", "config_id"),)

    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"))
    config_id: Mapped[str] = mapped_column(String(256))
    url: Mapped[str] = mapped_column(Text)
    auth_schemes: Mapped[list[Any] | None]
    secret_key_id: Mapped[str | None] = mapped_column(String(32))
    secret_sealed: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_by: Mapped[str] = mapped_column(String(256))
