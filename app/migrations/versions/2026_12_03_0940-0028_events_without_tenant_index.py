"""turn_events loses its index on tenant_id: every read of events names the turn (the primary key's
first column), so the index was only written, once per event row, on the service's hottest insert

Revision ID: 0028_events_without_tenant_index
Revises: 0027_output_guard
Create Date: 2026-12-03 09:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0028_events_without_tenant_index"
down_revision: str | None = "0027_output_guard"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_turn_events_tenant_id", table_name="turn_events")


def downgrade() -> None:
    op.create_index("ix_turn_events_tenant_id", "turn_events", ["tenant_id"], unique=False)
