"""NOTIFY followers from a statement-level trigger on turn_events (PostgreSQL only)

One notification per INSERT statement and turn, raised by the database itself: writers spend
no extra round trip, and a batch of events costs one NOTIFY.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 03:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CREATE_FUNCTION = """
CREATE FUNCTION notify_turn_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agent_runtime_turn_events', ids.turn_id::text)
  FROM (SELECT DISTINCT turn_id FROM new_rows) AS ids;
  RETURN NULL;
END
$$
"""
CREATE_TRIGGER = """
CREATE TRIGGER turn_events_notify AFTER INSERT ON turn_events
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_turn_events()
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(CREATE_FUNCTION)
    op.execute(CREATE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS turn_events_notify ON turn_events")
    op.execute("DROP FUNCTION IF EXISTS notify_turn_events()")
