"""hardening: why the service turned a schedule off (schedules.disabled_reason)

Revision ID: 0022_hardening
Revises: 0020_structured_files
Create Date: 2026-12-02 02:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_hardening"
down_revision: str | None = "0020_structured_files"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("schedules") as batch:
        batch.add_column(sa.Column("disabled_reason", sa.String(256), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("schedules") as batch:
        batch.drop_column("disabled_reason")
