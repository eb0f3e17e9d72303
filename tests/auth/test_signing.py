"""Outbound per-turn tokens: signed by our key, verifiable through the published JWKS."""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jose import jwt
from jose.exceptions import JWTClaimsError

from app.auth.signing import GENERATED_KEY_NAME, SigningKeys, TurnCredentials

ISSUER = "agent-runtime"


@pytest.fixture(scope="module")
def rsa_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture(scope="module")
def ec_pem() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _verify(keys: SigningKeys, token: str, audience: str) -> dict[str, Any]:
    """Verify the way a downstream service does: pick the published JWK by the token's `kid`."""
    kid = jwt.get_unverified_header(token)["kid"]
    [published] = [k for k in keys.jwks()["keys"] if k["kid"] == kid]
    return jwt.decode(token, published, algorithms=[published["alg"]], audience=audience, issuer=ISSUER)


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _credentials(keys: SigningKeys, clock: FakeClock | None = None, ttl: int = 300) -> TurnCredentials:
    return TurnCredentials(
        keys,
        issuer=ISSUER,
        ttl_seconds=ttl,
        tenant_id="tenant-1",
        agent_id="agent-1",
        session_id="session-1",
        turn_id="turn-1",
        user_sub="alice",
        clock=clock or FakeClock(),
    )


def test_generated_key_is_private_to_the_owner_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"

    first = SigningKeys.load_or_create(None, data_dir)
    second = SigningKeys.load_or_create(None, data_dir)

    key_file = data_dir / GENERATED_KEY_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first.kid == second.kid
    assert first.alg == "RS256"
    assert [p.name for p in data_dir.iterdir()] == [GENERATED_KEY_NAME]


def test_jwks_publishes_the_public_key_with_its_thumbprint(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)

    [published] = keys.jwks()["keys"]

    assert published["kid"] == keys.kid
    assert {published["kty"], published["alg"], published["use"]} == {"RSA", "RS256", "sig"}
    assert set(published) == {"kty", "n", "e", "kid", "alg", "use"}
    assert len(keys.kid) == 43


def test_jwks_verifies_a_minted_token(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)

    token, exp = keys.mint(audience="context-engine", claims={"x": 1}, ttl_seconds=120, issuer=ISSUER)

    header = jwt.get_unverified_header(token)
    claims = _verify(keys, token, "context-engine")
    assert header["kid"] == keys.kid
    assert header["alg"] == "RS256"
    assert claims["exp"] == exp
    assert claims["exp"] - claims["iat"] == 120
    assert claims["x"] == 1


def test_lifetime_is_capped_at_300_seconds(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)

    token, exp = keys.mint(audience="mcp-gateway", claims={}, ttl_seconds=3600, issuer=ISSUER, now=1000.0)

    claims = jwt.get_unverified_claims(token)
    assert claims["iat"] == 1000
    assert exp == claims["exp"] == 1300


def test_given_claims_cannot_override_the_registered_ones(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)

    token, _ = keys.mint(
        audience="mcp-gateway", claims={"aud": "other", "exp": 9_999_999_999}, ttl_seconds=60, issuer=ISSUER
    )

    claims = _verify(keys, token, "mcp-gateway")
    assert claims["aud"] == "mcp-gateway"
    assert claims["exp"] - claims["iat"] == 60


def test_turn_token_claims_are_exactly_the_contract(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)
    clock = FakeClock()

    token = _credentials(keys, clock).token_for("mcp-gateway")

    claims = jwt.get_unverified_claims(token)
    jti = claims.pop("jti")
    assert claims == {
        "iss": ISSUER,
        "aud": "mcp-gateway",
        "sub": "agent:agent-1",
        "act": {"sub": "alice"},
        "tenant_id": "tenant-1",
        "agent_id": "agent-1",
        "session_id": "session-1",
        "turn_id": "turn-1",
        "iat": int(clock.now),
        "exp": int(clock.now) + 300,
    }
    assert len(jti) == 32


def test_turn_tokens_are_scoped_to_their_audience(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)
    credentials = _credentials(keys, FakeClock(time.time()))

    gateway = credentials.token_for("mcp-gateway")
    engine = credentials.token_for("context-engine")

    assert _verify(keys, gateway, "mcp-gateway")["aud"] == "mcp-gateway"
    assert _verify(keys, engine, "context-engine")["aud"] == "context-engine"
    with pytest.raises(JWTClaimsError):
        _verify(keys, gateway, "context-engine")


def test_every_mint_has_a_fresh_jti(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)

    jtis = {
        jwt.get_unverified_claims(keys.mint(audience="a", claims={}, ttl_seconds=60, issuer=ISSUER, now=5.0)[0])["jti"]
        for _ in range(5)
    }

    assert len(jtis) == 5


def test_turn_token_is_cached_then_reminted_near_expiry(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)
    clock = FakeClock()
    credentials = _credentials(keys, clock, ttl=300)

    first = credentials.token_for("mcp-gateway")
    clock.now += 270
    still_cached = credentials.token_for("mcp-gateway")
    clock.now += 1
    renewed = credentials.token_for("mcp-gateway")

    assert still_cached == first
    assert renewed != first
    first_claims, renewed_claims = jwt.get_unverified_claims(first), jwt.get_unverified_claims(renewed)
    assert renewed_claims["iat"] == first_claims["iat"] + 271
    assert renewed_claims["jti"] != first_claims["jti"]


def test_repr_never_shows_a_token(rsa_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "k.pem", rsa_pem), tmp_path)
    credentials = _credentials(keys)

    token = credentials.token_for("context-engine")

    assert token not in repr(credentials)
    assert token.split(".")[2] not in repr(credentials)
    assert "PRIVATE" not in repr(keys)


def test_es256_key_file_signs_verifiable_tokens(ec_pem: bytes, tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(_write(tmp_path / "ec.pem", ec_pem), tmp_path)

    token, _ = keys.mint(audience="mcp-gateway", claims={}, ttl_seconds=60, issuer=ISSUER)

    [published] = keys.jwks()["keys"]
    assert keys.alg == "ES256"
    assert {published["kty"], published["crv"], published["alg"]} == {"EC", "P-256", "ES256"}
    assert set(published) == {"kty", "crv", "x", "y", "kid", "alg", "use"}
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    assert _verify(keys, token, "mcp-gateway")["aud"] == "mcp-gateway"


def test_rotation_keeps_tokens_of_the_old_key_verifiable(rsa_pem: bytes, ec_pem: bytes, tmp_path: Path) -> None:
    old_file = _write(tmp_path / "old.pem", rsa_pem)
    old = SigningKeys.load_or_create(old_file, tmp_path)
    old_token, _ = old.mint(audience="context-engine", claims={}, ttl_seconds=300, issuer=ISSUER)

    rotated = SigningKeys.load_or_create(
        _write(tmp_path / "new.pem", ec_pem), tmp_path, extra_public_key_files=[old_file]
    )
    new_token, _ = rotated.mint(audience="context-engine", claims={}, ttl_seconds=300, issuer=ISSUER)

    assert [k["kid"] for k in rotated.jwks()["keys"]] == [rotated.kid, old.kid]
    assert _verify(rotated, old_token, "context-engine")["iss"] == ISSUER
    assert _verify(rotated, new_token, "context-engine")["iss"] == ISSUER
    assert jwt.get_unverified_header(new_token)["kid"] == rotated.kid


def test_extra_public_key_pem_is_published_once(rsa_pem: bytes, tmp_path: Path) -> None:
    key_file = _write(tmp_path / "k.pem", rsa_pem)
    public = serialization.load_pem_private_key(rsa_pem, password=None).public_key()
    public_file = _write(
        tmp_path / "pub.pem",
        public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
    )

    keys = SigningKeys.load_or_create(key_file, tmp_path, extra_public_key_files=[public_file])

    assert [k["kid"] for k in keys.jwks()["keys"]] == [keys.kid]


def test_a_configured_key_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        SigningKeys.load_or_create(tmp_path / "absent.pem", tmp_path)

    assert not (tmp_path / GENERATED_KEY_NAME).exists()
