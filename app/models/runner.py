from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UtcDateTime, utcnow


class Runner(Base):
    """A live service process. Its heartbeat is the lease on the turns it runs (`turns.runner_id`)."""

    __tablename__ = "runners"

    id: Mapped[uuid.UUID] = mapped_column(Uuid(), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    lock_key: Mapped[int | None] = mapped_column(BigInteger)
    """The PostgreSQL advisory lock the process holds for its lifetime: free means the process is gone."""
