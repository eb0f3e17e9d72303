"""Run Alembic programmatically (`agent-runtime migrate`, and at start-up on SQLite)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

ROOT = Path(__file__).resolve().parents[2]


def alembic_config(url: str) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade_head(url: str) -> None:
    """Blocking (Alembic's env runs its own event loop): call it from a thread inside async code."""
    command.upgrade(alembic_config(url), "head")


def downgrade_base(url: str) -> None:
    command.downgrade(alembic_config(url), "base")
