"""Rotation without downtime: a key being rotated out stays published next to the signing key."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from app.settings import SigningSettings
from tests.conftest import make_settings, running_app


def _write_ec_key(path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


async def test_extra_public_keys_from_the_environment_are_published(
    database_url: str, tmp_path: Path, monkeypatch: object
) -> None:
    old = tmp_path / "old.pem"
    _write_ec_key(old)
    monkeypatch.setenv("SIGNING_EXTRA_PUBLIC_KEY_FILES", str(old))  # type: ignore[attr-defined]
    settings = make_settings(database_url, tmp_path, signing=SigningSettings())
    async with running_app(settings) as (_, client):
        keys = (await client.get("/.well-known/jwks.json")).json()["keys"]
    assert sorted(k["kty"] for k in keys) == ["EC", "RSA"]
    assert len({k["kid"] for k in keys}) == 2
