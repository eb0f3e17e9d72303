"""The HS256 secret generated into the data folder when no auth is configured."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

SECRET_FILE = "auth_secret"


def write_private_file(path: Path, content: bytes) -> None:
    """Create `path` with mode 0600 (never readable by others, even for an instant)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, content)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def load_or_create_secret(data_dir: Path) -> str:
    path = data_dir / SECRET_FILE
    if path.exists():
        return path.read_text().strip()
    write_private_file(path, secrets.token_urlsafe(48).encode())
    return path.read_text().strip()
