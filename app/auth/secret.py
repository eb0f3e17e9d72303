"""The HS256 secret generated into the data folder when no auth is configured."""

from __future__ import annotations

import contextlib
import os
import secrets
import uuid
from pathlib import Path

SECRET_FILE = "auth_secret"
MIN_SECRET_CHARS = 32


def write_private_file(path: Path, content: bytes, *, replace: bool = True) -> None:
    """Write `path` with mode 0600 (never readable by others, even for an instant).

    With `replace=False` an existing file wins: two processes starting at once agree on one content.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the umask cannot widen it, but be explicit
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if replace:
            os.replace(tmp, path)
            return
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class NoSecret(Exception):
    """The data folder has no generated secret yet (the service has not run on it)."""


def load_or_create_secret(data_dir: Path) -> str:
    """The data folder's secret, created on first use by the service (and the page's local sign-in)."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        write_private_file(path, secrets.token_urlsafe(48).encode(), replace=False)
    return load_secret(data_dir)


def load_secret(data_dir: Path) -> str:
    """The data folder's existing secret; `NoSecret` when there is none (nothing is written)."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        raise NoSecret(path)
    secret = path.read_text().strip()
    if len(secret) < MIN_SECRET_CHARS:
        raise ValueError(f"{path} holds no usable secret: delete it to generate a new one")
    return secret
