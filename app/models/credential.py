from __future__ import annotations

from datetime import datetime

from sqlalchemy import LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow


class Credential(IdMixin, TenantMixin, CreatedMixin, Base):
    """A tenant's provider key, encrypted (app/secrets/keyring.py); the key itself is never stored."""

    __tablename__ = "credentials"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    name: Mapped[str] = mapped_column(String(64))
    provider: Mapped[str] = mapped_column(String(32))
    base_url: Mapped[str | None] = mapped_column(String(2048))
    key_id: Mapped[str] = mapped_column(String(32))
    """Which key of SECRETS_KEY_FILE sealed `sealed_key`."""
    sealed_key: Mapped[bytes] = mapped_column(LargeBinary)
    last4: Mapped[str | None] = mapped_column(String(4))
    fingerprint: Mapped[str] = mapped_column(String(80))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


KEY_FIELDS = ("name", "provider", "base_url", "key_id", "sealed_key")
"""What a turn reads of a credential to call its provider (app/credentials/store.py)."""
