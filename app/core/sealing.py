"""The shape of an encrypted secret at rest, and of what seals and opens one (bound to its row)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SealedSecret:
    key_id: str
    blob: bytes


class SecretSealer(Protocol):
    """Encrypts a secret bound to `associated` data (the row it belongs to): a copy elsewhere does not open."""

    def seal(self, plaintext: str, associated: bytes) -> SealedSecret: ...

    def open(self, sealed: SealedSecret, associated: bytes) -> str: ...
