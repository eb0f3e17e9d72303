"""structured output and attachments: a turn's output schema and parsed output, files, and the
file references of messages (and of queued turns)

Revision ID: 0020_structured_files
Revises: 0021_session_title
Create Date: 2026-12-02 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020_structured_files"
down_revision: str | None = "0021_session_title"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("output_schema", JSON, nullable=True))
        batch.add_column(sa.Column("output", JSON, nullable=True))
        batch.add_column(sa.Column("attachments", JSON, nullable=True))
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("attachments", JSON, nullable=True))
    op.create_table(
        "files",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("owner_sub", sa.String(256), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("content_type", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=True),
        sa.Column("session_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name="fk_files_session_id_sessions", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_files"),
    )
    op.create_index("ix_files_tenant_id", "files", ["tenant_id"])
    op.create_index("ix_files_session_id", "files", ["session_id"])
    op.create_index("ix_files_tenant_owner_created", "files", ["tenant_id", "owner_sub", "created_at"])


def downgrade() -> None:
    op.drop_table("files")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("attachments")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("attachments")
        batch.drop_column("output")
        batch.drop_column("output_schema")
