"""output guard: a receipt of the output and tool_result points names its detector and match count;
an approval of a tool's result holds the result the human approves into the prompt

Revision ID: 0027_output_guard
Revises: 0026_a2a_push
Create Date: 2026-12-02 16:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027_output_guard"
down_revision: str | None = "0026_a2a_push"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("policy_decisions") as batch:
        batch.add_column(sa.Column("detector", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("match_count", sa.Integer(), nullable=True))
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("result", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("result")
    with op.batch_alter_table("policy_decisions") as batch:
        batch.drop_column("match_count")
        batch.drop_column("detector")
