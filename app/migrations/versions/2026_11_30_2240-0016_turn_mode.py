"""turns.mode and turns.max_steps: autonomous turns (PLAN / PURSUE); the plan itself is rebuilt from the turn's plan events

Revision ID: 0016
Revises: 0009_tenant_limits_quota
Create Date: 2026-11-30 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0009_tenant_limits_quota"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("mode", sa.String(length=16), server_default="interactive", nullable=False))
        batch.add_column(sa.Column("max_steps", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("max_steps")
        batch.drop_column("mode")
