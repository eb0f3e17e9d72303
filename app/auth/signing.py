"""Outbound per-turn tokens, signed with the service's own asymmetric key (DESIGN.md "Per-turn tokens").

One private key signs; any number of extra public keys stay published in the JWKS so tokens minted
before a key rotation keep verifying by `kid` until they expire.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jose import jwt
from jose.backends.base import Key
from jose.backends.cryptography_backend import CryptographyECKey, CryptographyRSAKey

MAX_TTL_SECONDS = 300
REFRESH_MARGIN_SECONDS = 30
GENERATED_KEY_NAME = "signing_key.pem"

Audience = Literal["mcp-gateway", "context-engine"]
Clock = Callable[[], float]
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _uint_b64url(value: int, length: int | None = None) -> str:
    size = length if length is not None else max(1, (value.bit_length() + 7) // 8)
    return _b64url(value.to_bytes(size, "big"))


def _public_jwk_members(key: PublicKey) -> dict[str, str]:
    """The RFC 7638 required members of the key, which are also what the JWKS publishes."""
    if isinstance(key, rsa.RSAPublicKey):
        numbers = key.public_numbers()
        return {"e": _uint_b64url(numbers.e), "kty": "RSA", "n": _uint_b64url(numbers.n)}
    if not isinstance(key.curve, ec.SECP256R1):
        raise ValueError(f"unsupported EC curve {key.curve.name}: ES256 needs P-256")
    point = key.public_numbers()
    return {"crv": "P-256", "kty": "EC", "x": _uint_b64url(point.x, 32), "y": _uint_b64url(point.y, 32)}


def _thumbprint(members: dict[str, str]) -> str:
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":"))
    return _b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


@dataclass(frozen=True, slots=True)
class _PublishedKey:
    kid: str
    alg: str
    members: dict[str, str]

    @classmethod
    def of(cls, key: PublicKey) -> _PublishedKey:
        members = _public_jwk_members(key)
        alg = "RS256" if members["kty"] == "RSA" else "ES256"
        return cls(kid=_thumbprint(members), alg=alg, members=members)

    def to_jwk(self) -> dict[str, str]:
        return {**self.members, "kid": self.kid, "alg": self.alg, "use": "sig"}


def _jose_signer(key: PrivateKey, alg: str) -> Key:
    if isinstance(key, rsa.RSAPrivateKey):
        return CryptographyRSAKey(key, alg)
    return CryptographyECKey(key, alg)


def _load_private_key(path: Path) -> PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path}: signing key must be RSA or EC P-256")
    return key


def _load_public_key(path: Path) -> PublicKey:
    """An extra key file may hold a public key or a retired private key; only its public half is kept."""
    data = path.read_bytes()
    key: Any
    if b"PRIVATE KEY" in data:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    else:
        key = serialization.load_pem_public_key(data)
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        raise ValueError(f"{path}: published key must be RSA or EC P-256")
    return key


def _write_new_key(path: Path) -> None:
    """Write a fresh RSA key readable by the owner only; a concurrent starter's key wins if it was first."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink()


class SigningKeys:
    """The active signing key plus the public keys still published for rotation.

    Loading or generating keys is CPU-bound and touches the disk: call `load_or_create` once at start-up
    in a worker thread (`await anyio.to_thread.run_sync(...)`), never on the event loop.
    """

    __slots__ = ("_alg", "_kid", "_published", "_signer")

    def __init__(self, private_key: PrivateKey, extra_public_keys: Sequence[PublicKey] = ()) -> None:
        active = _PublishedKey.of(private_key.public_key())
        self._kid = active.kid
        self._alg = active.alg
        self._signer = _jose_signer(private_key, active.alg)
        self._published = _dedupe([active, *(_PublishedKey.of(k) for k in extra_public_keys)])

    @classmethod
    def load_or_create(
        cls, key_file: Path | None, data_dir: Path, extra_public_key_files: Iterable[Path] = ()
    ) -> SigningKeys:
        """Load `key_file`, or the key generated into `data_dir` on first start (created if missing)."""
        path = key_file if key_file is not None else data_dir / GENERATED_KEY_NAME
        if key_file is None and not path.exists():
            _write_new_key(path)
        extras = [_load_public_key(p) for p in extra_public_key_files]
        return cls(_load_private_key(path), extras)

    @property
    def kid(self) -> str:
        return self._kid

    @property
    def alg(self) -> str:
        return self._alg

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        return {"keys": [key.to_jwk() for key in self._published]}

    def mint(
        self,
        *,
        audience: str,
        claims: dict[str, Any],
        ttl_seconds: int,
        issuer: str,
        now: float | None = None,
    ) -> tuple[str, int]:
        """Sign `claims` for `audience`; returns the token and its `exp`. Lifetime is capped at 300 s."""
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        issued_at = int(time.time() if now is None else now)
        expires = issued_at + min(ttl_seconds, MAX_TTL_SECONDS)
        payload = {
            **claims,
            "iss": issuer,
            "aud": audience,
            "iat": issued_at,
            "exp": expires,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(payload, self._signer, algorithm=self._alg, headers={"kid": self._kid})
        return token, expires

    def __repr__(self) -> str:
        return f"SigningKeys(kid={self._kid!r}, alg={self._alg!r}, published={len(self._published)})"


def _dedupe(keys: list[_PublishedKey]) -> tuple[_PublishedKey, ...]:
    by_kid: dict[str, _PublishedKey] = {}
    for key in keys:
        by_kid.setdefault(key.kid, key)
    return tuple(by_kid.values())


@dataclass(frozen=True, slots=True)
class _Minted:
    token: str
    expires_at: int


class TurnCredentials:
    """Agent-scoped tokens for one turn, minted on first use per audience and cached.

    `act.sub` names the human the agent acts for (RFC 8693; the session's owner), so a peer can
    apply that user's permissions too.

    A cached token is replaced once fewer than 30 s of its lifetime remain, so a turn that outlives
    its token gets a fresh one before its next outbound call.
    """

    __slots__ = ("_cache", "_clock", "_identity", "_issuer", "_keys", "_ttl")

    def __init__(
        self,
        keys: SigningKeys,
        *,
        issuer: str,
        ttl_seconds: int,
        tenant_id: str,
        agent_id: str,
        session_id: str,
        turn_id: str,
        user_sub: str,
        clock: Clock = time.time,
    ) -> None:
        self._keys = keys
        self._issuer = issuer
        self._ttl = ttl_seconds
        self._clock = clock
        self._identity = {
            "sub": f"agent:{agent_id}",
            "tenant_id": tenant_id,
            "agent_id": agent_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "act": {"sub": user_sub},
        }
        self._cache: dict[str, _Minted] = {}

    def token_for(self, audience: Audience) -> str:
        now = self._clock()
        cached = self._cache.get(audience)
        if cached is not None and cached.expires_at - now >= REFRESH_MARGIN_SECONDS:
            return cached.token
        token, expires_at = self._keys.mint(
            audience=audience, claims=self._identity, ttl_seconds=self._ttl, issuer=self._issuer, now=now
        )
        self._cache[audience] = _Minted(token, expires_at)
        return token

    def __repr__(self) -> str:
        return (
            f"TurnCredentials(turn_id={self._identity['turn_id']!r}, "
            f"agent_id={self._identity['agent_id']!r}, minted={sorted(self._cache)!r})"
        )
