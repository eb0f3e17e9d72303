"""The AES-256-GCM keys that encrypt stored provider keys (SECRETS_KEY_FILE).

The file holds one base64 key of 32 bytes a line (`openssl rand -base64 32` makes one); the first
line encrypts, every line decrypts. A key's id is derived from the key (the first 16 hex digits of
its SHA-256), so a row names the key that sealed it without the file naming ids. Rotation puts a new
key on the first line and re-encrypts the rows (`agent-runtime rotate-secrets-key`); a process that
meets a key id it does not know reads the file again, so running replicas follow a rotation.

Each ciphertext is `nonce (12 bytes) || ciphertext || tag`, sealed with associated data that binds it
to its row (tenant, name, provider, base URL): a ciphertext copied to another row, or a row whose
`base_url` was changed in the database, does not decrypt.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.auth.secret import write_private_file

KEY_FILE = "secrets.key"
KEY_BYTES = 32
NONCE_BYTES = 12


class SecretUnreadable(Exception):
    """A stored secret that cannot be decrypted (unknown key id, or tampered)."""


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


def new_key() -> bytes:
    return os.urandom(KEY_BYTES)


def format_keys(keys: list[bytes]) -> bytes:
    return b"".join(base64.b64encode(key) + b"\n" for key in keys)


def parse_keys(text: str, source: Path) -> list[bytes]:
    keys: list[bytes] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != KEY_BYTES:
            raise ValueError(f"{source}:{number} is not a base64 key of {KEY_BYTES} bytes")
        keys.append(key)
    if not keys:
        raise ValueError(f"{source} holds no key")
    return keys


@dataclass(frozen=True, slots=True)
class Sealed:
    key_id: str
    blob: bytes


class SecretsKeyring:
    def __init__(self, keys: list[bytes], path: Path | None = None) -> None:
        if not keys:
            raise ValueError("a keyring needs at least one key")
        self.path = path
        self._keys = list(keys)
        self._by_id = {key_id(key): AESGCM(key) for key in keys}

    @classmethod
    def load_or_create(cls, key_file: Path | None, data_dir: Path) -> SecretsKeyring:
        """Blocking file I/O: call it off the event loop. Generates DATA_DIR/secrets.key (0600) when unset."""
        path = key_file or data_dir / KEY_FILE
        if key_file is None and not path.exists():
            write_private_file(path, format_keys([new_key()]), replace=False)
        return cls(parse_keys(path.read_text(), path), path)

    @property
    def current_key_id(self) -> str:
        return key_id(self._keys[0])

    @property
    def key_ids(self) -> list[str]:
        return [key_id(key) for key in self._keys]

    def knows(self, kid: str) -> bool:
        return kid in self._by_id

    def seal(self, plaintext: str, associated: bytes) -> Sealed:
        nonce = os.urandom(NONCE_BYTES)
        blob = nonce + AESGCM(self._keys[0]).encrypt(nonce, plaintext.encode(), associated)
        return Sealed(self.current_key_id, blob)

    def open(self, sealed: Sealed, associated: bytes) -> str:
        aead = self._by_id.get(sealed.key_id)
        if aead is None:
            raise SecretUnreadable(f"no key with id {sealed.key_id} in the secrets key file")
        try:
            return aead.decrypt(sealed.blob[:NONCE_BYTES], sealed.blob[NONCE_BYTES:], associated).decode()
        except InvalidTag:
            raise SecretUnreadable(f"a secret sealed with key {sealed.key_id} failed its integrity check") from None

    def reloaded(self) -> SecretsKeyring:
        """The keyring as the file says now (blocking: call it off the event loop)."""
        if self.path is None:
            return self
        return SecretsKeyring(parse_keys(self.path.read_text(), self.path), self.path)

    def with_new_key(self) -> SecretsKeyring:
        """A keyring whose new first key encrypts; the old keys still decrypt."""
        return SecretsKeyring([new_key(), *self._keys], self.path)

    def without(self, unused: set[str]) -> SecretsKeyring:
        kept = [key for index, key in enumerate(self._keys) if index == 0 or key_id(key) not in unused]
        return SecretsKeyring(kept, self.path)

    def save(self) -> None:
        """Write the keys to the file (blocking, atomic, mode 0600)."""
        if self.path is None:
            raise ValueError("this keyring has no file")
        write_private_file(self.path, format_keys(self._keys))
