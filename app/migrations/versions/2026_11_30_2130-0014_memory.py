"""memory_items: long-term memory with full-text search

PostgreSQL searches a GIN index on `to_tsvector('simple', search_text)`; SQLite keeps an FTS5 table
(`memory_search`) in step with triggers. The 'simple' configuration does no stemming, so search
works the same for every language and matches what the SQLite side does.

Revision ID: 0014
Revises: 0005
Create Date: 2026-11-30 21:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision: str = "0014"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE memory_search USING fts5(item_id UNINDEXED, search_text)",
    """CREATE TRIGGER memory_items_search_insert AFTER INSERT ON memory_items BEGIN
         INSERT INTO memory_search (item_id, search_text) VALUES (NEW.id, NEW.search_text);
       END""",
    """CREATE TRIGGER memory_items_search_update AFTER UPDATE OF search_text ON memory_items BEGIN
         UPDATE memory_search SET search_text = NEW.search_text WHERE item_id = NEW.id;
       END""",
    """CREATE TRIGGER memory_items_search_delete AFTER DELETE ON memory_items BEGIN
         DELETE FROM memory_search WHERE item_id = OLD.id;
       END""",
]


def upgrade() -> None:
    op.create_table(
        "memory_items",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scope", sa.String(length=300), nullable=False),
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("value", JSON, nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_items")),
        sa.UniqueConstraint(
            "tenant_id", "scope", "namespace", "key", name=op.f("uq_memory_items_tenant_id_scope_namespace_key")
        ),
    )
    op.create_index(op.f("ix_memory_items_tenant_id"), "memory_items", ["tenant_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE INDEX ix_memory_items_search ON memory_items USING gin (to_tsvector('simple', search_text))"
        )
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_memory_items_search")
    else:
        op.execute("DROP TABLE memory_search")
    op.drop_index(op.f("ix_memory_items_tenant_id"), table_name="memory_items")
    op.drop_table("memory_items")
