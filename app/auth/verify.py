"""Inbound bearer-token verification: one strict function for HS256 secrets and JWKS keys.

Algorithms are pinned by the kind of key we hold, never read from the token header, and every
registered claim we rely on is checked explicitly: python-jose alone accepts a token without
`aud` even when an audience is configured.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import httpx
from jose import jwk, jwt
from jose.exceptions import JOSEError

from app.auth.principal import Principal
from app.errors import Unauthorized

OUTBOUND_AUDIENCES = frozenset({"mcp-gateway", "context-engine"})
_ALG_BY_KTY = {"RSA": "RS256", "EC": "ES256"}


class JwksCache:
    """Keys by `kid`, refreshed after `ttl` seconds, refetched at most once for an unknown kid."""

    def __init__(self, url: str, http: httpx.AsyncClient, ttl: float) -> None:
        self._url = url
        self._http = http
        self._ttl = ttl
        self._keys: dict[str, dict[str, Any]] = {}
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    async def get(self, kid: str) -> dict[str, Any]:
        if time.monotonic() - self._fetched_at > self._ttl or kid not in self._keys:
            await self._refresh(force=kid not in self._keys)
        key = self._keys.get(kid)
        if key is None:
            raise Unauthorized("Token signed by an unknown key")
        return key

    async def _refresh(self, *, force: bool) -> None:
        started = time.monotonic()
        async with self._lock:
            if self._fetched_at >= started and not force:
                return
            try:
                response = await self._http.get(self._url, timeout=5.0)
                response.raise_for_status()
                keys = response.json().get("keys", [])
            except (httpx.HTTPError, ValueError) as exc:
                raise Unauthorized("Signing keys are unavailable") from exc
            self._keys = {k["kid"]: k for k in keys if isinstance(k, dict) and "kid" in k}
            self._fetched_at = time.monotonic()


class TokenVerifier:
    def __init__(
        self,
        *,
        secret: str | None = None,
        jwks: JwksCache | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        leeway: int = 30,
    ) -> None:
        if (secret is None) == (jwks is None):
            raise ValueError("configure exactly one of an HS256 secret or a JWKS")
        if jwks is not None and not (issuer and audience):
            raise ValueError("a JWKS requires an issuer and an audience")
        self._secret = secret
        self._jwks = jwks
        self._issuer = issuer
        self._audience = audience
        self._leeway = min(leeway, 60)

    async def verify(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except JOSEError as exc:
            raise Unauthorized("Malformed bearer token") from exc
        key, algorithm = await self._key_for(header)
        if header.get("alg") != algorithm:
            raise Unauthorized("Token algorithm is not accepted")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self._audience,
                issuer=self._issuer,
                options={
                    "require_exp": True,
                    "require_iat": True,
                    "require_aud": self._audience is not None,
                    "require_iss": self._issuer is not None,
                    "leeway": self._leeway,
                    "verify_aud": self._audience is not None,
                },
            )
        except JOSEError as exc:
            raise Unauthorized(_reason(exc)) from exc
        return self._principal(claims)

    async def _key_for(self, header: Mapping[str, Any]) -> tuple[Any, str]:
        if self._secret is not None:
            return self._secret, "HS256"
        assert self._jwks is not None
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise Unauthorized("Token has no key id")
        data = await self._jwks.get(kid)
        algorithm = _ALG_BY_KTY.get(str(data.get("kty")))
        if algorithm is None:
            raise Unauthorized("Signing key type is not accepted")
        try:
            return jwk.construct(data, algorithm), algorithm
        except JOSEError as exc:
            raise Unauthorized("Signing key is unusable") from exc

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        if self._audience is not None and claims.get("aud") is None:
            raise Unauthorized("Token has no audience")
        if self._issuer is not None and claims.get("iss") != self._issuer:
            raise Unauthorized("Token issuer is not accepted")
        audiences = claims.get("aud")
        audiences = {audiences} if isinstance(audiences, str) else set(audiences or ())
        sub, tenant = claims.get("sub"), claims.get("tenant_id")
        if audiences & OUTBOUND_AUDIENCES or (isinstance(sub, str) and sub.startswith("agent:")):
            raise Unauthorized("Agent tokens are not accepted by this API")
        if not isinstance(sub, str) or not sub or not isinstance(tenant, str) or not tenant:
            raise Unauthorized("Token lacks sub or tenant_id")
        roles = claims.get("roles") or []
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise Unauthorized("Token roles must be a list of strings")
        return Principal(sub=sub, tenant_id=tenant, roles=frozenset(roles))


def _reason(exc: JOSEError) -> str:
    text = str(exc).lower()
    if "expired" in text:
        return "Token has expired"
    if "audience" in text or "aud" in text:
        return "Token audience is not accepted"
    if "issuer" in text:
        return "Token issuer is not accepted"
    if "signature" in text:
        return "Token signature is invalid"
    if "missing" in text or "required" in text:
        return "Token lacks a required claim"
    return "Token is invalid"


def mint_user_token(
    secret: str,
    *,
    tenant_id: str,
    sub: str,
    roles: list[str],
    ttl_seconds: int,
    issuer: str | None = None,
    audience: str | None = None,
) -> str:
    """A bearer token for this service's own API (HS256; what `agent-runtime token` prints)."""
    now = int(time.time())
    claims: dict[str, Any] = {"sub": sub, "tenant_id": tenant_id, "roles": roles, "iat": now, "exp": now + ttl_seconds}
    if issuer:
        claims["iss"] = issuer
    if audience:
        claims["aud"] = audience
    return str(jwt.encode(claims, secret, algorithm="HS256"))
