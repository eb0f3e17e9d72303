"""branching: forks (sessions.forked_from_*), regenerated turns (turns.supersedes_turn_id, one per
turn) and the messages a regenerated turn put aside (messages.superseded_by_turn_id)

Revision ID: 0019_branching
Revises: 0023_channels
Create Date: 2026-12-02 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_branching"
down_revision: str | None = "0023_channels"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("forked_from_session_id", sa.Uuid(), nullable=True))
        batch.add_column(sa.Column("forked_from_message_id", sa.BigInteger(), nullable=True))
    op.create_index("ix_sessions_forked_from", "sessions", ["forked_from_session_id"])
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("supersedes_turn_id", sa.Uuid(), nullable=True))
    op.create_index("uq_turns_supersedes", "turns", ["supersedes_turn_id"], unique=True)
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("superseded_by_turn_id", sa.Uuid(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("superseded_by_turn_id")
    op.drop_index("uq_turns_supersedes", table_name="turns")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("supersedes_turn_id")
    op.drop_index("ix_sessions_forked_from", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("forked_from_message_id")
        batch.drop_column("forked_from_session_id")
