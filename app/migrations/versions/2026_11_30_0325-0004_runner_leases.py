"""runner leases: a heartbeat per service process, and the process that runs each turn

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 03:25:20.322282
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table("runners",
    sa.Column("id", sa.Uuid(), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("id", name=op.f("pk_runners"))
    )
    op.add_column("turns", sa.Column("runner_id", sa.Uuid(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("runner_id")
    op.drop_table("runners")
