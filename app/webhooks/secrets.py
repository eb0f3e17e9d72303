"""Webhook signing secrets at rest: AES-256-GCM, bound to the webhook's row.

HMAC signing needs the secret itself, so it cannot be stored as a hash; it is encrypted instead,
with a key kept outside the database (DATA_DIR/webhook-secrets.key, 0600, generated on first start,
or WEBHOOK_SECRETS_KEY_FILE). A database dump alone reveals no secret, and a ciphertext copied to
another row does not open (the row's tenant and id are its associated data).
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.auth.secret import write_private_file
from app.core.sealing import SealedSecret

KEY_FILE = "webhook-secrets.key"
NONCE_BYTES = 12


class WebhookSecrets:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)
        self.key_id = hashlib.sha256(key).hexdigest()[:16]

    @classmethod
    def load_or_create(cls, key_file: Path | None, data_dir: Path) -> WebhookSecrets:
        """Blocking file I/O: call it off the event loop."""
        path = key_file or data_dir / KEY_FILE
        if key_file is None and not path.exists():
            write_private_file(path, base64.b64encode(os.urandom(32)) + b"\n", replace=False)
        return cls(base64.b64decode(path.read_text().strip(), validate=True))

    def seal(self, plaintext: str, associated: bytes) -> SealedSecret:
        nonce = os.urandom(NONCE_BYTES)
        return SealedSecret(self.key_id, nonce + self._aead.encrypt(nonce, plaintext.encode(), associated))

    def open(self, sealed: SealedSecret, associated: bytes) -> str:
        blob = sealed.blob
        return self._aead.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], associated).decode()
