"""eval_results gets an index on item_id: deleting a dataset cascades from each of its items to the
results naming it, and without the index every item deleted scanned the whole table

The scan also made the delete hold its locks far longer, while the eval runner waits on them.

Revision ID: 0029_eval_results_item_index
Revises: 0028_fewer_write_indexes
Create Date: 2026-12-03 11:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0029_eval_results_item_index"
down_revision: str | None = "0028_fewer_write_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(op.f("ix_eval_results_item_id"), "eval_results", ["item_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_eval_results_item_id"), table_name="eval_results")
