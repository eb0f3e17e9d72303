from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin, UtcDateTime, utcnow


class Dataset(IdMixin, TenantMixin, CreatedMixin, Base):
    """A named list of eval items of one tenant (app/evals)."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    owner_sub: Mapped[str] = mapped_column(String(256))
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    item_count: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class DatasetItem(IdMixin, TenantMixin, CreatedMixin, Base):
    """One input with what is expected of its answer, and the tool results recorded for it."""

    __tablename__ = "dataset_items"
    __table_args__ = (UniqueConstraint("dataset_id", "position"),)

    dataset_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    input: Mapped[str] = mapped_column(Text)
    expected: Mapped[dict[str, Any]]
    """`{"checks": [...], "reference": str | None}`."""
    recorded_tools: Mapped[list[Any]] = mapped_column(default=list)
    """`[{"name", "arguments", "result", "is_error"}]`: what answers a `tools: "recorded"` run."""
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
