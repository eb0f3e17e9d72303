"""`agent-runtime rotate-secrets-key`: a new key on the first line of SECRETS_KEY_FILE, then every
stored credential re-sealed under it.

An operator command, so it spans every tenant. Each row is updated only if it still carries the key
id it was read with, so a PUT racing the rotation is never overwritten. Old keys stay in the file
(running replicas may still hold them in memory) unless `prune` is asked for, which removes the keys
no row uses any more.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from app.credentials.repository import SealedCredentials
from app.credentials.sealing import associated_data
from app.secrets.keyring import Sealed, SecretsKeyring, SecretUnreadable

BATCH = 200


@dataclass(frozen=True, slots=True)
class RotationReport:
    new_key_id: str
    resealed: int
    unreadable: int
    """Rows no key of the file opens (sealed under a key that was removed, or tampered): left as they are."""
    pruned: list[str]


async def rotate_secrets_key(engine: AsyncEngine, keyring: SecretsKeyring, *, prune: bool) -> RotationReport:
    rotated = keyring.with_new_key()
    await asyncio.to_thread(rotated.save)
    resealed, unreadable = await reseal_all(engine, rotated)
    pruned: list[str] = []
    if prune:
        async with engine.connect() as conn:
            used = await SealedCredentials(conn).key_ids()
        pruned = [kid for kid in rotated.key_ids[1:] if kid not in used]
        await asyncio.to_thread(rotated.without(set(pruned)).save)
    return RotationReport(rotated.current_key_id, resealed, unreadable, pruned)


async def reseal_all(engine: AsyncEngine, keyring: SecretsKeyring) -> tuple[int, int]:
    """Re-seal every row not under the keyring's current key: (re-sealed, unreadable)."""
    current = keyring.current_key_id
    resealed = unreadable = 0
    after: uuid.UUID | None = None
    while True:
        async with engine.begin() as conn:
            credentials = SealedCredentials(conn)
            rows = await credentials.not_under(current, after=after, limit=BATCH)
            if not rows:
                return resealed, unreadable
            after = rows[-1].id
            for row in rows:
                associated = associated_data(row.tenant_id, row.name, row.provider, row.base_url)
                try:
                    plaintext = keyring.open(Sealed(row.key_id, row.sealed_key), associated)
                except SecretUnreadable:
                    unreadable += 1
                    continue
                sealed = keyring.seal(plaintext, associated)
                resealed += await credentials.reseal(row.id, was=row.key_id, key_id=sealed.key_id, blob=sealed.blob)
