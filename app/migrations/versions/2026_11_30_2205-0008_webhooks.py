"""webhooks: subscriptions, and the delivery outbox written with the events it carries

Revision ID: 0008_webhooks
Revises: 0007_credentials
Create Date: 2026-11-30 21:15:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008_webhooks"
down_revision: str | None = "0007_credentials"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table("webhooks",
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("events", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False),
    sa.Column("secret_key_id", sa.String(length=32), nullable=False),
    sa.Column("secret_sealed", sa.LargeBinary(), nullable=False),
    sa.Column("created_by", sa.String(length=256), nullable=False),
    sa.Column("id", sa.Uuid(), nullable=False),
    sa.Column("tenant_id", sa.String(length=128), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks"))
    )
    op.create_index(op.f("ix_webhooks_tenant_id"), "webhooks", ["tenant_id"], unique=False)
    op.create_table("webhook_deliveries",
    sa.Column("webhook_id", sa.Uuid(), nullable=False),
    sa.Column("turn_id", sa.Uuid(), nullable=False),
    sa.Column("seq", sa.Integer(), nullable=False),
    sa.Column("event_type", sa.String(length=40), nullable=False),
    sa.Column("payload", sa.Text(), nullable=False),
    sa.Column("status", sa.String(length=16), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("response_status", sa.Integer(), nullable=True),
    sa.Column("last_error", sa.Text(), nullable=True),
    sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("id", sa.Uuid(), nullable=False),
    sa.Column("tenant_id", sa.String(length=128), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"], name=op.f("fk_webhook_deliveries_webhook_id_webhooks"), ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    sa.UniqueConstraint("webhook_id", "turn_id", "seq", name=op.f("uq_webhook_deliveries_webhook_id_turn_id_seq"))
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"], unique=False)
    op.create_index("ix_webhook_deliveries_webhook_created", "webhook_deliveries", ["webhook_id", "created_at"], unique=False)
    op.create_index(op.f("ix_webhook_deliveries_tenant_id"), "webhook_deliveries", ["tenant_id"], unique=False)


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
