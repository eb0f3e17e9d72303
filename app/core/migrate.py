"""Run Alembic programmatically (`agent-runtime migrate`, and at start-up on SQLite)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def project_root() -> Path:
    """Where `alembic.ini` and `migrations/` live.

    In a source checkout (or an editable install) that is next to `app/`; a regular `pip install .`
    puts `app` in site-packages without them, so the working folder is tried next (the Dockerfile
    copies both into its WORKDIR).
    """
    for candidate in (SOURCE_ROOT, Path.cwd()):
        if (candidate / "alembic.ini").is_file() and (candidate / "migrations" / "env.py").is_file():
            return candidate
    raise RuntimeError("alembic.ini and migrations/ not found: run agent-runtime from the project folder")


def alembic_config(url: str) -> Config:
    root = project_root()
    config = Config(str(root / "alembic.ini"))
    config.set_main_option("script_location", str(root / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade_head(url: str) -> None:
    """Blocking (Alembic's env runs its own event loop): call it from a thread inside async code."""
    command.upgrade(alembic_config(url), "head")


def downgrade_base(url: str) -> None:
    command.downgrade(alembic_config(url), "base")
