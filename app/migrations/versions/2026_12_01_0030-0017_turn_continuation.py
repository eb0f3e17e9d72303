"""turn continuation: the event ids a run may have shown (turns.seq_ceiling), the hand-over marker,
the runner's advisory-lock key, and the index the liveness sweep reads running turns through

Revision ID: 0017_turn_continuation
Revises: 0016
Create Date: 2026-12-01 00:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_turn_continuation"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RUNNING = sa.text("status = 'running'")


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("seq_ceiling", sa.Integer(), server_default="0", nullable=False))
        batch.add_column(sa.Column("handed_over", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.create_index(
        "ix_turns_running_runner", "turns", ["runner_id"], postgresql_where=RUNNING, sqlite_where=RUNNING
    )
    with op.batch_alter_table("runners") as batch:
        batch.add_column(sa.Column("lock_key", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runners") as batch:
        batch.drop_column("lock_key")
    op.drop_index("ix_turns_running_runner", table_name="turns")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("handed_over")
        batch.drop_column("seq_ceiling")
