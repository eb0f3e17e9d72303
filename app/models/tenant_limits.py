from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UtcDateTime, utcnow


class TenantLimits(Base):
    """The ceilings of one tenant (`GET/PUT /limits`); a missing row or a NULL field is no ceiling."""

    __tablename__ = "tenant_limits"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    max_loops: Mapped[int | None] = mapped_column(Integer)
    max_output_tokens: Mapped[int | None] = mapped_column(BigInteger)
    max_total_tokens: Mapped[int | None] = mapped_column(BigInteger)
    max_concurrent_turns: Mapped[int | None] = mapped_column(Integer)
    quota_period: Mapped[str | None] = mapped_column(String(8))
    quota_tokens: Mapped[int | None] = mapped_column(BigInteger)
    updated_by: Mapped[str] = mapped_column(String(256))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
