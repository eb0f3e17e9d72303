"""Inbound bearer-token verification: one strict function for HS256 secrets and JWKS keys.

Algorithms are pinned by the kind of key we hold, never read from the token header, and every
registered claim we rely on is checked explicitly: python-jose alone accepts a token without
`aud` even when an audience is configured.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import httpx
from jose import jwk, jwt
from jose.exceptions import JOSEError

from app.auth.principal import Principal
from app.errors import Unauthorized

OUTBOUND_AUDIENCES = frozenset({"mcp-gateway", "context-engine", "turn-events"})
"""Audiences of tokens this service mints for others (and of stream tokens): never an API bearer."""
MAX_LEEWAY_SECONDS = 60
MAX_IDENTITY_CHARS = 128
_ALG_BY_KTY = {"RSA": "RS256", "EC": "ES256"}
_JWKS_ALGORITHMS = frozenset(_ALG_BY_KTY.values())
VERIFIED_TTL_SECONDS = 60.0
"""How long a verified token is taken without checking its signature again (never past its `exp`)."""
VERIFIED_TOKENS = 4096
log = logging.getLogger(__name__)


class JwksCache:
    """Keys by `kid`, refreshed after `ttl` seconds.

    A token with an unknown `kid` causes at most one refetch, and refetches for unknown kids are
    spaced by `min_refetch_interval`, so a flood of made-up kids cannot hammer the key server.
    When a refresh fails, keys already known keep working until the next successful refresh.
    """

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        ttl: float,
        *,
        min_refetch_interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = url
        self._http = http
        self._ttl = ttl
        self._min_refetch_interval = min_refetch_interval
        self._clock = clock
        self._keys: dict[str, dict[str, Any]] = {}
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    def _age(self) -> float | None:
        return None if self._fetched_at is None else self._clock() - self._fetched_at

    async def get(self, kid: str) -> dict[str, Any]:
        age = self._age()
        known = kid in self._keys
        if age is None or age >= self._ttl or (not known and age >= self._min_refetch_interval):
            await self._refresh(since=self._fetched_at, have_key=known)
        key = self._keys.get(kid)
        if key is None:
            raise Unauthorized("Token signed by an unknown key")
        return key

    async def _refresh(self, *, since: float | None, have_key: bool) -> None:
        async with self._lock:
            if self._fetched_at != since:  # another request refreshed while we waited
                return
            try:
                keys = await self._fetch()
            except (httpx.HTTPError, ValueError) as exc:
                if have_key:
                    log.warning("JWKS refresh failed; keeping the cached keys: %s", type(exc).__name__)
                    return
                raise Unauthorized("Signing keys are unavailable") from exc
            self._keys = keys
            self._fetched_at = self._clock()

    async def _fetch(self) -> dict[str, dict[str, Any]]:
        response = await self._http.get(self._url, timeout=5.0)
        response.raise_for_status()
        document = response.json()
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise ValueError("JWKS document has no `keys` list")
        return {k["kid"]: k for k in keys if isinstance(k, dict) and isinstance(k.get("kid"), str)}


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
        if secret is not None and not secret.strip():
            raise ValueError("the HS256 secret must not be empty")
        if jwks is not None and not (issuer and audience):
            raise ValueError("a JWKS requires an issuer and an audience")
        self._secret = secret
        self._jwks = jwks
        self._issuer = issuer
        self._audience = audience
        self._leeway = max(0, min(leeway, MAX_LEEWAY_SECONDS))
        self._verified: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    async def verify(self, token: str) -> Principal:
        """The caller a valid token names, else `Unauthorized`.

        A token that passed every check is remembered (at most `VERIFIED_TOKENS`, least recently
        used out) until its `exp` or for `VERIFIED_TTL_SECONDS`, whichever comes first: a client
        sends the same bearer with every request, and a signature check costs ~45 µs. A key removed
        from the JWKS therefore stops a token it signed within that minute, not at once."""
        remembered = self._verified.get(token)
        if remembered is not None:
            principal, until = remembered
            if time.time() < until:
                self._verified.move_to_end(token)
                return principal
            del self._verified[token]
        principal, expires = await self._checked(token)
        self._remember(token, principal, min(expires + self._leeway, time.time() + VERIFIED_TTL_SECONDS))
        return principal

    def _remember(self, token: str, principal: Principal, until: float) -> None:
        self._verified[token] = (principal, until)
        if len(self._verified) > VERIFIED_TOKENS:
            self._verified.popitem(last=False)

    async def _checked(self, token: str) -> tuple[Principal, float]:
        try:
            header = jwt.get_unverified_header(token)
        except JOSEError as exc:
            raise Unauthorized("Malformed bearer token") from exc
        allowed = _JWKS_ALGORITHMS if self._jwks is not None else frozenset({"HS256"})
        if header.get("alg") not in allowed:  # checked before any key lookup or JWKS fetch
            raise Unauthorized("Token algorithm is not accepted")
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
        except (TypeError, ValueError, OverflowError) as exc:  # python-jose calls int() on exp/iat/nbf
            raise Unauthorized("Token time claims must be numbers") from exc
        return self._principal(claims), float(claims["exp"])

    async def _key_for(self, header: Mapping[str, Any]) -> tuple[Any, str]:
        if self._secret is not None:
            return self._secret, "HS256"
        assert self._jwks is not None
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unauthorized("Token has no key id")
        data = await self._jwks.get(kid)
        algorithm = _ALG_BY_KTY.get(str(data.get("kty")))
        if algorithm is None or data.get("use", "sig") != "sig":
            raise Unauthorized("Signing key type is not accepted")
        if algorithm == "ES256" and data.get("crv") != "P-256":
            raise Unauthorized("Signing key curve is not accepted")
        try:
            return jwk.construct(data, algorithm), algorithm
        except JOSEError as exc:
            raise Unauthorized("Signing key is unusable") from exc

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        audiences = _audiences(claims.get("aud"))
        if self._audience is not None and self._audience not in audiences:
            raise Unauthorized("Token audience is not accepted")
        if self._issuer is not None and claims.get("iss") != self._issuer:
            raise Unauthorized("Token issuer is not accepted")
        _require_numeric_times(claims)
        if claims["iat"] > time.time() + self._leeway:
            raise Unauthorized("Token is issued in the future")
        sub, tenant = claims.get("sub"), claims.get("tenant_id")
        if audiences & OUTBOUND_AUDIENCES or (isinstance(sub, str) and sub.startswith("agent:")):
            raise Unauthorized("Agent tokens are not accepted by this API")
        if not (_is_identifier(sub) and _is_identifier(tenant)):
            raise Unauthorized("Token sub or tenant_id is missing or malformed")
        roles = claims.get("roles", [])
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise Unauthorized("Token roles must be a list of strings")
        return Principal(sub=sub, tenant_id=tenant, roles=frozenset(roles))


def _require_numeric_times(claims: Mapping[str, Any]) -> None:
    """RFC 7519 NumericDate: a JSON number. python-jose also takes `"1700000000"` (it calls int())."""
    present = [name for name in ("exp", "iat", "nbf") if name in claims or name != "nbf"]
    for value in (claims.get(name) for name in present):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Unauthorized("Token time claims must be numbers")


def _is_identifier(value: object) -> TypeGuard[str]:
    """What a tenant or user id may be: stored in every row (`String(128)`) and written to logs:
    printable (no NUL, no control characters, no lone surrogates), not blank, at most 128 characters."""
    return (
        isinstance(value, str) and 0 < len(value) <= MAX_IDENTITY_CHARS and not value.isspace() and value.isprintable()
    )


def _audiences(value: object) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return frozenset(value)
    raise Unauthorized("Token audience is malformed")


def _reason(exc: JOSEError) -> str:
    text = str(exc).lower()
    if "expired" in text:
        return "Token has expired"
    if "missing" in text or "required" in text:
        return "Token lacks a required claim"
    if "audience" in text or "aud" in text:
        return "Token audience is not accepted"
    if "issuer" in text:
        return "Token issuer is not accepted"
    if "signature" in text:
        return "Token signature is invalid"
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
    claims: dict[str, Any] = {
        "sub": sub,
        "tenant_id": tenant_id,
        "roles": roles,
        "iat": now,
        "exp": now + ttl_seconds,
    }
    if issuer:
        claims["iss"] = issuer
    if audience:
        claims["aud"] = audience
    return str(jwt.encode(claims, secret, algorithm="HS256"))
