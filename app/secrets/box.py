"""The keyring one process uses, read again from its file when the file changed (a rotation)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from app.secrets.keyring import Sealed, SecretsKeyring, SecretUnreadable


class SecretBox:
    def __init__(self, keyring: SecretsKeyring) -> None:
        self.keyring = keyring
        self._mtime = _mtime(keyring.path)
        self._lock = asyncio.Lock()

    async def current(self) -> SecretsKeyring:
        """The keyring, reloaded first if its file changed since it was read."""
        path = self.keyring.path
        if path is None:
            return self.keyring
        async with self._lock:
            mtime = await asyncio.to_thread(_mtime, path)
            if mtime != self._mtime:
                self.keyring = await asyncio.to_thread(self.keyring.reloaded)
                self._mtime = mtime
        return self.keyring

    async def open(self, sealed: Sealed, associated: bytes) -> str:
        """The plaintext; a key id this process lacks makes it read the file again first."""
        keyring = self.keyring if self.keyring.knows(sealed.key_id) else await self.current()
        if not keyring.knows(sealed.key_id):
            raise SecretUnreadable(f"no key with id {sealed.key_id} in the secrets key file")
        return keyring.open(sealed, associated)


def _mtime(path: Path | None) -> float | None:
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None
