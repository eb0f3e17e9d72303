"""Standard Webhooks signatures: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`.

The signature is HMAC-SHA256 over `{id}.{timestamp}.{body}` with the secret's key bytes; a secret is
`whsec_` + base64 of 32 random bytes (the form receivers' libraries take as it is).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
MIN_SECRET_BYTES = 24
MAX_SECRET_BYTES = 64


class InvalidSecret(ValueError):
    """A supplied secret that is not `whsec_` + base64 of 24 to 64 bytes."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(os.urandom(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The key bytes of a `whsec_…` secret; raises InvalidSecret for anything else."""
    if not secret.startswith(SECRET_PREFIX):
        raise InvalidSecret(f"a webhook secret starts with {SECRET_PREFIX}")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSecret("a webhook secret is whsec_ followed by base64") from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise InvalidSecret(f"a webhook secret's key has {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes")
    return key


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(key: bytes, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key, message_id, timestamp, body),
        "content-type": "application/json",
    }
