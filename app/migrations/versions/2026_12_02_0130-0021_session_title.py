"""session title: set from the first user message, editable with PATCH /sessions/{id}

Revision ID: 0021_session_title
Revises: 0019_branching
Create Date: 2026-12-02 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_session_title"
down_revision: str | None = "0019_branching"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("title", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("title")
