"""How one credential's key is sealed: the associated data that binds it to its row, and what a
read may show of it (never the key)."""

from __future__ import annotations

import hashlib
import json

from app.secrets.keyring import Sealed, SecretsKeyring

MIN_KEY_CHARS_FOR_LAST4 = 12
"""A shorter key (a local server's placeholder such as `ollama`) shows no last 4: they would be most of it."""


def associated_data(tenant_id: str, name: str, provider: str, base_url: str | None) -> bytes:
    return json.dumps([tenant_id, name, provider, base_url], separators=(",", ":")).encode()


def fingerprint(api_key: str) -> str:
    """`sha256:` and the first 16 hex digits of the key's SHA-256 (compare with `printf %s "$KEY" | sha256sum`)."""
    return "sha256:" + hashlib.sha256(api_key.encode()).hexdigest()[:16]


def last4(api_key: str) -> str | None:
    return api_key[-4:] if len(api_key) >= MIN_KEY_CHARS_FOR_LAST4 else None


def seal_key(
    keyring: SecretsKeyring, api_key: str, *, tenant_id: str, name: str, provider: str, base_url: str | None
) -> Sealed:
    return keyring.seal(api_key, associated_data(tenant_id, name, provider, base_url))
