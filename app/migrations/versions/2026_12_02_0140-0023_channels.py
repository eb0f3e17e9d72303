"""turns.channel and approvals.decided_channel: the door a turn came through (api, mcp, a2a) and the one a decision did

Revision ID: 0023_channels
Revises: 0024_evals
Create Date: 2026-12-02 01:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023_channels"
down_revision: str | None = "0024_evals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("channel", sa.String(length=16), server_default="api", nullable=False))
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("decided_channel", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("decided_channel")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("channel")
