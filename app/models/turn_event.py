from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Integer, String, Text, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, TenantMixin, UtcDateTime, utcnow


class TurnEvent(TenantMixin, Base):
    """One SSE event of a turn; `data` is the exact JSON text that was streamed.

    No foreign key to `turns`: it cost a check per event row, the hottest insert of the service, and
    only the turn's own writer inserts events, after the turn row is committed (migration 0005). No
    index on `tenant_id` either: every read names the turn, and the tenant is a filter on its rows
    (migration 0028).
    """

    __tablename__ = "turn_events"

    tenant_id: Mapped[str] = mapped_column(String(128))

    turn_id: Mapped[uuid.UUID] = mapped_column(Uuid(), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    type: Mapped[str] = mapped_column(String(40))
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
