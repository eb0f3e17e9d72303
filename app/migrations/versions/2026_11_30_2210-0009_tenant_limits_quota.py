"""tenant ceilings, the quota ledger, usage kinds, per-turn total budgets, turn slots, human receipts

Revision ID: 0009_tenant_limits_quota
Revises: 0006_dispatched_tool_calls
Create Date: 2026-11-30 21:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "0009_tenant_limits_quota"
down_revision: str | None = "0006_dispatched_tool_calls"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RUNNING_SLOT = sa.text("status = 'running' AND concurrency_slot IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "tenant_limits",
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("max_loops", sa.Integer(), nullable=True),
        sa.Column("max_output_tokens", sa.BigInteger(), nullable=True),
        sa.Column("max_total_tokens", sa.BigInteger(), nullable=True),
        sa.Column("max_concurrent_turns", sa.Integer(), nullable=True),
        sa.Column("quota_period", sa.String(length=8), nullable=True),
        sa.Column("quota_tokens", sa.BigInteger(), nullable=True),
        sa.Column("updated_by", sa.String(length=256), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenant_limits")),
    )
    op.create_table(
        "quota_ledger",
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("period_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=False),
        sa.Column("reserved", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "period_start", name=op.f("pk_quota_ledger")),
    )
    with op.batch_alter_table("usage") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), server_default=sa.text("'model'"), nullable=False))
    op.create_index("ix_usage_tenant_created", "usage", ["tenant_id", "created_at"], unique=False)
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("max_total_tokens", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("concurrency_slot", sa.Integer(), nullable=True))
    with op.batch_alter_table("policy_decisions") as batch:
        batch.add_column(sa.Column("decided_by", sa.String(length=256), nullable=True))
        batch.add_column(sa.Column("arguments_sha256", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("edited_arguments_sha256", sa.String(length=64), nullable=True))
    op.create_index(
        "uq_turns_running_slot",
        "turns",
        ["tenant_id", "concurrency_slot"],
        unique=True,
        postgresql_where=RUNNING_SLOT,
        sqlite_where=RUNNING_SLOT,
    )


def downgrade() -> None:
    op.drop_index("uq_turns_running_slot", table_name="turns")
    with op.batch_alter_table("policy_decisions") as batch:
        batch.drop_column("edited_arguments_sha256")
        batch.drop_column("arguments_sha256")
        batch.drop_column("decided_by")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("concurrency_slot")
        batch.drop_column("max_total_tokens")
    op.drop_index("ix_usage_tenant_created", table_name="usage")
    with op.batch_alter_table("usage") as batch:
        batch.drop_column("kind")
    op.drop_table("quota_ledger")
    op.drop_table("tenant_limits")
