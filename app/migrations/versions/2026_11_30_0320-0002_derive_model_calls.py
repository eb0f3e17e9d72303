"""sessions.model_calls is derived from the stored assistant messages instead

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 03:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("model_calls")


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("model_calls", sa.Integer(), nullable=False, server_default="0"))
