"""tool ledger: a call is recorded as dispatched (result NULL) before it leaves, completed after

Revision ID: 0006_dispatched_tool_calls
Revises: 0010_session_lifecycle
Create Date: 2026-11-30 22:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_dispatched_tool_calls"
down_revision: str | None = "0010_session_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tool_executions") as batch:
        batch.add_column(sa.Column("status", sa.String(length=16), server_default="completed", nullable=False))
        batch.alter_column("result", existing_type=sa.Text(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM tool_executions WHERE status = 'dispatched'")
    with op.batch_alter_table("tool_executions") as batch:
        batch.alter_column("result", existing_type=sa.Text(), nullable=False)
        batch.drop_column("status")
