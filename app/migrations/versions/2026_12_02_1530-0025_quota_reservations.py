"""quota reservations: which turn holds each reservation on the quota ledger, so a crash's is released

Revision ID: 0025_quota_reservations
Revises: 0022_hardening
Create Date: 2026-12-02 15:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025_quota_reservations"
down_revision: str | None = "0022_hardening"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "quota_reservations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("period_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["turn_id"], ["turns.id"], name="fk_quota_reservations_turn_id_turns", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_quota_reservations"),
    )
    op.create_index("ix_quota_reservations_turn_id", "quota_reservations", ["turn_id"])


def downgrade() -> None:
    op.drop_table("quota_reservations")
