"""Stream tokens: a ≤ 60 s credential for one turn's events, for a browser's `EventSource`.

`EventSource` cannot send an `Authorization` header, so a signed-in page asks for a stream token
(`POST /turns/{id}/stream-token`, bearer-authenticated) and puts it in the URL as `?access_token=`.
Because a URL leaks more easily than a header (history, proxies), the token is worth little:
signed by the service's own key with audience `turn-events`, it names one turn and the caller
(`sub`, `tenant_id`, `roles`), lives at most 60 s, and only the events route of that very turn
reads it. The API's bearer verifier refuses its audience everywhere else.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from jose import jwt
from jose.exceptions import JOSEError

from app.auth.principal import Principal
from app.auth.signing import SigningKeys
from app.errors import Unauthorized

STREAM_AUDIENCE = "turn-events"
STREAM_TOKEN_TTL_SECONDS = 60
_ALGORITHMS = ["RS256", "ES256"]


@dataclass(frozen=True, slots=True)
class StreamToken:
    token: str
    expires_in: int


def mint_stream_token(
    keys: SigningKeys,
    principal: Principal,
    turn_id: uuid.UUID,
    *,
    issuer: str,
    ttl_seconds: int = STREAM_TOKEN_TTL_SECONDS,
) -> StreamToken:
    ttl = max(1, min(ttl_seconds, STREAM_TOKEN_TTL_SECONDS))
    claims = {
        "sub": principal.sub,
        "tenant_id": principal.tenant_id,
        "roles": sorted(principal.roles),
        "turn_id": str(turn_id),
    }
    token, _ = keys.mint(audience=STREAM_AUDIENCE, claims=claims, ttl_seconds=ttl, issuer=issuer)
    return StreamToken(token=token, expires_in=ttl)


def verify_stream_token(keys: SigningKeys, token: str, turn_id: uuid.UUID, *, issuer: str) -> Principal:
    """The caller the token was minted for, if it is a live stream token of this turn; else 401."""
    try:
        claims = jwt.decode(
            token,
            keys.jwks(),
            algorithms=_ALGORITHMS,
            audience=STREAM_AUDIENCE,
            issuer=issuer,
            options={"require_exp": True, "require_iat": True, "require_aud": True, "leeway": 0},
        )
    except JOSEError as exc:
        raise Unauthorized("Stream token is invalid or expired") from exc
    if claims.get("exp", 0) - claims.get("iat", 0) > STREAM_TOKEN_TTL_SECONDS:
        raise Unauthorized("Stream token is invalid or expired")
    if claims.get("turn_id") != str(turn_id):
        raise Unauthorized("Stream token is for another turn")
    sub, tenant, roles = claims.get("sub"), claims.get("tenant_id"), claims.get("roles", [])
    if not isinstance(sub, str) or not isinstance(tenant, str) or not isinstance(roles, list):
        raise Unauthorized("Stream token is invalid or expired")
    return Principal(sub=sub, tenant_id=tenant, roles=frozenset(str(r) for r in roles))
