from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UtcDateTime


class QuotaLedger(Base):
    """A tenant's token quota in one period, shared by every replica (app/runtime/store/quota.py).

    `used` is settled usage; `reserved` the worst case of model calls still running. A call may
    start only while `used + reserved < quota`, checked and reserved in one statement.
    """

    __tablename__ = "quota_ledger"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    period_start: Mapped[datetime] = mapped_column(UtcDateTime(), primary_key=True)
    used: Mapped[int] = mapped_column(BigInteger, default=0)
    reserved: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
