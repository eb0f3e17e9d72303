"""session lifecycle and compaction: sessions.external_id/last_active_at/purged_at, summaries

`last_active_at` starts as the session's `updated_at`. Partial indexes keep the idle sweep (open
sessions by `last_active_at`) and the retention sweep (ended, unpurged sessions by `closed_at`)
proportional to their batch, and a unique index makes get-or-create by `external_id` race-free.

Revision ID: 0010_session_lifecycle
Revises: 0008_webhooks
Create Date: 2026-11-30 21:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_session_lifecycle"
down_revision: str | None = "0008_webhooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN = sa.text("status = 'open'")
ENDED_NOT_PURGED = sa.text("status IN ('closed', 'expired') AND purged_at IS NULL")


def upgrade() -> None:
    op.add_column("sessions", sa.Column("external_id", sa.String(length=256), nullable=True))
    op.add_column("sessions", sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("sessions", sa.Column("purged_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE sessions SET last_active_at = updated_at")
    with op.batch_alter_table("sessions") as batch:
        batch.alter_column(
            "last_active_at", existing_type=sa.DateTime(timezone=True), nullable=False,
            server_default=sa.text("CURRENT_TIMESTAMP"),
        )  # fmt: skip
    op.create_index(
        "uq_sessions_external_id", "sessions", ["tenant_id", "owner_sub", "agent_id", "external_id"], unique=True
    )
    op.create_index(
        "ix_sessions_open_last_active", "sessions", ["last_active_at"], postgresql_where=OPEN, sqlite_where=OPEN
    )
    op.create_index(
        "ix_sessions_ended_unpurged", "sessions", ["closed_at"],
        postgresql_where=ENDED_NOT_PURGED, sqlite_where=ENDED_NOT_PURGED,
    )  # fmt: skip
    op.create_table(
        "summaries",
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("first_message_id", sa.BigInteger(), nullable=False),
        sa.Column("last_message_id", sa.BigInteger(), nullable=False),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_summaries_session_id_sessions"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], name=op.f("fk_summaries_turn_id_turns"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_summaries")),
    )
    op.create_index("ix_summaries_session_last", "summaries", ["session_id", "last_message_id"], unique=False)
    op.create_index(op.f("ix_summaries_tenant_id"), "summaries", ["tenant_id"], unique=False)
    op.create_index(op.f("ix_summaries_turn_id"), "summaries", ["turn_id"], unique=False)


def downgrade() -> None:
    op.drop_table("summaries")
    op.drop_index("ix_sessions_ended_unpurged", table_name="sessions")
    op.drop_index("ix_sessions_open_last_active", table_name="sessions")
    op.drop_index("uq_sessions_external_id", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("purged_at")
        batch.drop_column("last_active_at")
        batch.drop_column("external_id")
