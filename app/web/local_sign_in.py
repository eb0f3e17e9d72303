"""One-click sign-in for the person at the machine that runs the service, and nobody else.

Allowed only when all of these hold, each closing one way in:
- the service generated its own secret (no `AUTH_JWT_SECRET`, no JWKS): an operator who configured
  real auth has users with real tokens, and this shortcut must not bypass their issuer;
- `WEB_LOCAL_SIGN_IN` is on (the default);
- the TCP peer is a loopback address and the request carries no proxy header (`Forwarded`,
  `X-Forwarded-For`, `X-Real-IP`): a reverse proxy on the same host makes remote users look local;
- the `Host` is a loopback name or address: a DNS-rebinding page (`evil.example` resolving to
  127.0.0.1) sends its own host name, so it is refused;
- an `Origin`, when sent, is the same loopback origin: another site's page cannot mint a token.
Anyone who passes these can already read the secret in the data folder (`agent-runtime token`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

from app.auth.secret import load_or_create_secret
from app.auth.verify import mint_user_token
from app.settings import Settings

LOCAL_TENANT = "local"
LOCAL_SUB = "local"
LOCAL_TOKEN_TTL_SECONDS = 12 * 3600
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
_PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip", "x-forwarded-host")


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(authority: str) -> str:
    return (urlsplit(f"//{authority}").hostname or "").lower()


def refusal(settings: Settings, *, peer: str | None, headers: Mapping[str, str]) -> str | None:
    """Why this request may not have a local token, or None when it may."""
    if settings.auth.jwt_secret or settings.auth.jwks_url:
        return "Local sign-in is off: this service is configured with its own authentication"
    if not settings.http.web_local_sign_in:
        return "Local sign-in is off (WEB_LOCAL_SIGN_IN=false)"
    if not _is_loopback(peer) or any(name in headers for name in _PROXY_HEADERS):
        return "Local sign-in works only from the machine that runs the service (127.0.0.1)"
    host = _host_name(headers.get("host", ""))
    if host not in _LOOPBACK_NAMES:
        return "Local sign-in works only at http://127.0.0.1 or http://localhost"
    origin = headers.get("origin")
    if origin is not None and (urlsplit(origin).hostname or "").lower() not in _LOOPBACK_NAMES:
        return "Local sign-in is refused to pages of another origin"
    return None


def local_token(settings: Settings, *, tenant_id: str = LOCAL_TENANT, sub: str = LOCAL_SUB) -> str:
    """A token of an admin of `tenant_id`, signed with the generated secret (what `agent-runtime token` uses)."""
    return mint_user_token(
        load_or_create_secret(settings.data_dir),
        tenant_id=tenant_id,
        sub=sub,
        roles=["admin"],
        ttl_seconds=LOCAL_TOKEN_TTL_SECONDS,
    )
