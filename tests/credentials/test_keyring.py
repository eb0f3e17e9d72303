"""SECRETS_KEY_FILE: generated private, AES-GCM bound to its row, rotated without losing a key."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from app.cli import main
from app.core.db import create_engine
from app.core.migrate import upgrade_head
from app.credentials.sealing import associated_data, fingerprint, seal_key
from app.models import Credential
from app.secrets.box import SecretBox
from app.secrets.keyring import KEY_FILE, Sealed, SecretsKeyring, SecretUnreadable, format_keys, new_key
from app.settings import get_settings

AAD = associated_data("tenant-a", "openai", "openai", None)


def test_a_generated_key_file_is_private_and_reused(tmp_path: Path) -> None:
    first = SecretsKeyring.load_or_create(None, tmp_path)
    again = SecretsKeyring.load_or_create(None, tmp_path)

    path = tmp_path / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.current_key_id == again.current_key_id


def test_a_sealed_key_opens_only_for_its_own_row(tmp_path: Path) -> None:
    keyring = SecretsKeyring.load_or_create(None, tmp_path)
    sealed = keyring.seal("sk-secret", AAD)

    assert b"sk-secret" not in sealed.blob
    assert keyring.open(sealed, AAD) == "sk-secret"
    with pytest.raises(SecretUnreadable):
        keyring.open(sealed, associated_data("tenant-b", "openai", "openai", None))
    with pytest.raises(SecretUnreadable):
        keyring.open(sealed, associated_data("tenant-a", "openai", "openai", "https://evil.example/v1"))
    with pytest.raises(SecretUnreadable):
        keyring.open(Sealed("0" * 16, sealed.blob), AAD)


@pytest.mark.parametrize("content", ["", "not base64!\n", base64.b64encode(b"short").decode()])
def test_a_malformed_key_file_is_refused_by_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "keys"
    path.write_text(content)

    with pytest.raises(ValueError, match=str(path)):
        SecretsKeyring.load_or_create(path, tmp_path)


async def test_a_process_reads_the_file_again_when_a_rotation_changed_it(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_bytes(format_keys([new_key()]))
    box = SecretBox(SecretsKeyring.load_or_create(path, tmp_path))
    rotated = box.keyring.with_new_key()
    rotated.save()
    os.utime(path, (1, 1))  # a distinct mtime, whatever the file system's resolution
    sealed = rotated.seal("sk-after-rotation", AAD)

    opened = await box.open(sealed, AAD)

    assert opened == "sk-after-rotation"
    assert (await box.current()).current_key_id == rotated.current_key_id


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    key_file = tmp_path / "secrets.key"
    key_file.write_bytes(format_keys([new_key()]))
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SECRETS_KEY_FILE", str(key_file))
    get_settings.cache_clear()
    upgrade_head(url)
    yield url, key_file
    get_settings.cache_clear()


def test_rotate_secrets_key_reseals_every_row_and_prunes_the_old_key(
    cli_env: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, key_file = cli_env
    old = SecretsKeyring.load_or_create(key_file, key_file.parent)
    keys = {f"tenant-{n}": f"sk-key-of-tenant-{n}-0123456789" for n in range(3)}

    async def plant() -> None:
        engine = create_engine(url)
        async with engine.begin() as conn:
            for tenant, key in keys.items():
                sealed = seal_key(old, key, tenant_id=tenant, name="openai", provider="openai", base_url=None)
                await conn.execute(insert(Credential).values(
                    id=uuid.uuid4(), tenant_id=tenant, name="openai", provider="openai", base_url=None,
                    key_id=sealed.key_id, sealed_key=sealed.blob, last4=key[-4:],
                    fingerprint=fingerprint(key)))  # fmt: skip
        await engine.dispose()

    async def read() -> list[Credential]:
        engine = create_engine(url)
        async with engine.connect() as conn:
            rows = list((await conn.execute(select(Credential))).all())
        await engine.dispose()
        return rows  # type: ignore[return-value]

    asyncio.run(plant())
    assert main(["rotate-secrets-key", "--prune"]) == 0

    rotated = SecretsKeyring.load_or_create(key_file, key_file.parent)
    assert rotated.key_ids == [rotated.current_key_id] != [old.current_key_id]
    assert "3 credential(s) re-sealed" in capsys.readouterr().out
    for row in asyncio.run(read()):
        assert row.key_id == rotated.current_key_id
        aad = associated_data(row.tenant_id, row.name, row.provider, row.base_url)
        assert rotated.open(Sealed(row.key_id, row.sealed_key), aad) == keys[row.tenant_id]
