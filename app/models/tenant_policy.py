from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class TenantPolicy(IdMixin, TenantMixin, CreatedMixin, Base):
    """One version of a tenant's policy set; the highest version is in force."""

    __tablename__ = "tenant_policies"
    __table_args__ = (UniqueConstraint("tenant_id", "version"),)

    version: Mapped[int] = mapped_column(Integer)
    policies: Mapped[list[Any]]
    policy_hash: Mapped[str] = mapped_column(String(64))
    created_by: Mapped[str] = mapped_column(String(256))
