from __future__ import annotations

from typing import Any

from sqlalchemy import LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class Webhook(IdMixin, TenantMixin, CreatedMixin, Base):
    """A tenant's subscription: event types POSTed to `url`, signed with a secret stored sealed."""

    __tablename__ = "webhooks"

    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[Any]]
    secret_key_id: Mapped[str] = mapped_column(String(32))
    secret_sealed: Mapped[bytes] = mapped_column(LargeBinary)
    created_by: Mapped[str] = mapped_column(String(256))
