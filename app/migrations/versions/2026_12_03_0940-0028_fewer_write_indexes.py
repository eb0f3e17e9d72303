"""fewer indexes written per turn: turn_events and sessions lose their index on tenant_id alone

Every read of events names the turn (the primary key's first column), so that index was only written,
once per event row, on the service's hottest insert. The sessions' composite indexes lead with
tenant_id, and each turn's start updates the session row (a non-HOT update: every index is written).

Revision ID: 0028_fewer_write_indexes
Revises: 0027_output_guard
Create Date: 2026-12-03 09:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0028_fewer_write_indexes"
down_revision: str | None = "0027_output_guard"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_turn_events_tenant_id", table_name="turn_events")
    op.drop_index("ix_sessions_tenant_id", table_name="sessions")


def downgrade() -> None:
    op.create_index("ix_sessions_tenant_id", "sessions", ["tenant_id"], unique=False)
    op.create_index("ix_turn_events_tenant_id", "turn_events", ["tenant_id"], unique=False)
