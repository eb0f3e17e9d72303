"""a2a push: A2A push notification configs per task, delivered through the webhook outbox

Revision ID: 0026_a2a_push
Revises: 0025_quota_reservations
Create Date: 2026-12-02 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0026_a2a_push"
down_revision: str | None = "0025_quota_reservations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "a2a_push_configs",
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("config_id", sa.String(length=256), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("auth_schemes", JSON, nullable=True),
        sa.Column("secret_key_id", sa.String(length=32), nullable=True),
        sa.Column("secret_sealed", sa.LargeBinary(), nullable=True),
        sa.Column("created_by", sa.String(length=256), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["turn_id"], ["turns.id"], name=op.f("fk_a2a_push_configs_turn_id_turns"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_a2a_push_configs")),
        sa.UniqueConstraint("turn_id", "config_id", name=op.f("uq_a2a_push_configs_turn_id_config_id")),
    )
    op.create_index(op.f("ix_a2a_push_configs_tenant_id"), "a2a_push_configs", ["tenant_id"], unique=False)
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.alter_column("webhook_id", existing_type=sa.Uuid(), nullable=True)
        batch.add_column(sa.Column("push_config_id", sa.Uuid(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_webhook_deliveries_push_config_id_a2a_push_configs"),
            "a2a_push_configs",
            ["push_config_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.create_unique_constraint(
            op.f("uq_webhook_deliveries_push_config_id_turn_id_seq"), ["push_config_id", "turn_id", "seq"]
        )
        batch.create_check_constraint(
            op.f("ck_webhook_deliveries_one_target"), "(webhook_id IS NULL) <> (push_config_id IS NULL)"
        )


def downgrade() -> None:
    op.execute("DELETE FROM webhook_deliveries WHERE push_config_id IS NOT NULL")
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_constraint(op.f("ck_webhook_deliveries_one_target"), type_="check")
        batch.drop_constraint(op.f("uq_webhook_deliveries_push_config_id_turn_id_seq"), type_="unique")
        batch.drop_constraint(op.f("fk_webhook_deliveries_push_config_id_a2a_push_configs"), type_="foreignkey")
        batch.drop_column("push_config_id")
        batch.alter_column("webhook_id", existing_type=sa.Uuid(), nullable=False)
    op.drop_index(op.f("ix_a2a_push_configs_tenant_id"), table_name="a2a_push_configs")
    op.drop_table("a2a_push_configs")
