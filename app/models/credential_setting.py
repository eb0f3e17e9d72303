from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UtcDateTime, utcnow


class CredentialSetting(Base):
    """A tenant's stance on provider keys: `byok_only` forbids the operator's environment keys."""

    __tablename__ = "credential_settings"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    byok_only: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
