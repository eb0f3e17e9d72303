"""evals: datasets and their items, eval runs and their per-item results; sessions.purpose

Revision ID: 0024_evals
Revises: 0017_turn_continuation
Create Date: 2026-12-02 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0024_evals"
down_revision: str | None = "0017_turn_continuation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _common() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("purpose", sa.String(length=16), server_default="chat", nullable=False))
    op.create_table(
        "datasets",
        *_common(),
        sa.Column("owner_sub", sa.String(length=256), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_datasets")),
        sa.UniqueConstraint("tenant_id", "name", name=op.f("uq_datasets_tenant_id_name")),
    )
    op.create_index(op.f("ix_datasets_tenant_id"), "datasets", ["tenant_id"])
    op.create_table(
        "dataset_items",
        *_common(),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("expected", JSON, nullable=False),
        sa.Column("recorded_tools", JSON, nullable=False),
        sa.Column("metadata", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_dataset_items_dataset_id_datasets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dataset_items")),
        sa.UniqueConstraint("dataset_id", "position", name=op.f("uq_dataset_items_dataset_id_position")),
    )
    op.create_index(op.f("ix_dataset_items_tenant_id"), "dataset_items", ["tenant_id"])
    op.create_table(
        "eval_runs",
        *_common(),
        sa.Column("owner_sub", sa.String(length=256), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("agent_version", sa.Integer(), nullable=False),
        sa.Column("baseline_version", sa.Integer(), nullable=True),
        sa.Column("tools", sa.String(length=16), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("runner_id", sa.Uuid(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_eval_runs_dataset_id_datasets"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_eval_runs_agent_id_agents"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
    )
    op.create_index("ix_eval_runs_status", "eval_runs", ["status"])
    op.create_index(op.f("ix_eval_runs_tenant_id"), "eval_runs", ["tenant_id"])
    op.create_table(
        "eval_results",
        *_common(),
        sa.Column("eval_id", sa.Uuid(), nullable=False),
        sa.Column("item_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("agent_version", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("turn_status", sa.String(length=24), nullable=True),
        sa.Column("scores", JSON, nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["eval_id"], ["eval_runs.id"], name=op.f("fk_eval_results_eval_id_eval_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["item_id"], ["dataset_items.id"], name=op.f("fk_eval_results_item_id_dataset_items"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_results")),
        sa.UniqueConstraint(
            "eval_id", "item_id", "agent_version", name=op.f("uq_eval_results_eval_id_item_id_agent_version")
        ),
    )
    op.create_index(op.f("ix_eval_results_eval_id"), "eval_results", ["eval_id"])
    op.create_index(op.f("ix_eval_results_tenant_id"), "eval_results", ["tenant_id"])


def downgrade() -> None:
    op.drop_table("eval_results")
    op.drop_table("eval_runs")
    op.drop_table("dataset_items")
    op.drop_table("datasets")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("purpose")
