"""structured output and attachments: a turn's output schema and parsed output

Revision ID: 0020_structured_files
Revises: 0017_turn_continuation
Create Date: 2026-12-02 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020_structured_files"
down_revision: str | None = "0017_turn_continuation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("output_schema", JSON, nullable=True))
        batch.add_column(sa.Column("output", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("output")
        batch.drop_column("output_schema")
