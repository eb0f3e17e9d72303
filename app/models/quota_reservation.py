from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UtcDateTime


class QuotaReservation(Base):
    """One model call's reservation on the quota ledger, until it settles (app/runtime/store/quota.py).

    The ledger only sums reservations; this row says which turn holds each, so a reservation whose
    call was cut by a crash is released by the turn's continuation (or its end) instead of staying
    counted until the period ends. Deleting the row is what releases it: exactly once, whoever
    (the settling write, the continuation, the end of an unowned turn) deletes it first.
    """

    __tablename__ = "quota_reservations"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    period_start: Mapped[datetime] = mapped_column(UtcDateTime())
    tokens: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
