from __future__ import annotations

import uuid

from sqlalchemy import BigInteger, ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, CreatedMixin, IdMixin, TenantMixin


class File(IdMixin, TenantMixin, CreatedMixin, Base):
    """An uploaded attachment: its bytes in `content` (PostgreSQL `bytea`, SQLite blob), or in
    `FILE_STORE_DIR` under its id when that is set (then `content` is null)."""

    __tablename__ = "files"
    __table_args__ = (Index("ix_files_tenant_owner_created", "tenant_id", "owner_sub", "created_at"),)

    owner_sub: Mapped[str] = mapped_column(String(256))
    name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    content: Mapped[bytes | None] = mapped_column(LargeBinary)
    session_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    """The session whose turn first used the file: retention deletes it with that session."""
