"""`make run` installs what the service needs, not the dev extra (test, lint and browser tooling)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_installs_the_service_without_the_dev_extra() -> None:
    planned = subprocess.run(
        ["make", "--dry-run", "--always-make", "run"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in planned.splitlines() if "pip install" in line and "-e" in line]
    assert installs == [".venv/bin/pip install --quiet -e ."]
    assert "[dev]" not in planned


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lock_writes_the_image_lock_and_the_claude_lock() -> None:
    planned = subprocess.run(
        ["make", "--dry-run", "--always-make", "lock"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    compiles = [line for line in planned.splitlines() if "uv pip compile" in line]
    assert [line.split(" -o ")[-1] for line in compiles] == ["requirements.lock", "requirements-claude.lock"]
    assert "--extra claude" not in compiles[0]
    assert "--extra claude" in compiles[1]
