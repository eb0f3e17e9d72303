from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class AuditRecord(IdMixin, TenantMixin, CreatedMixin, Base):
    """Advisory facts worth keeping, e.g. `integrity_check_skipped`."""

    __tablename__ = "audit_records"

    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]]
