"""credentials: tenant provider keys (BYOK), encrypted at rest, and the tenant's BYOK-only stance

Revision ID: 0007_credentials
Revises: 0015
Create Date: 2026-11-30 22:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_credentials"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "credentials",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("base_url", sa.String(length=2048), nullable=True),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("sealed_key", sa.LargeBinary(), nullable=False),
        sa.Column("last4", sa.String(length=4), nullable=True),
        sa.Column("fingerprint", sa.String(length=80), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credentials")),
        sa.UniqueConstraint("tenant_id", "name", name=op.f("uq_credentials_tenant_id_name")),
    )
    op.create_index(op.f("ix_credentials_tenant_id"), "credentials", ["tenant_id"], unique=False)
    op.create_table(
        "credential_settings",
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("byok_only", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_credential_settings")),
    )


def downgrade() -> None:
    op.drop_table("credential_settings")
    op.drop_index(op.f("ix_credentials_tenant_id"), table_name="credentials")
    op.drop_table("credentials")
