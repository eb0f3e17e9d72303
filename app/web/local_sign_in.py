"""One-click sign-in for the person at the machine that runs the service, and nobody else.

Allowed only when all of these hold, each closing one way in:
- the service generated its own secret (no `AUTH_JWT_SECRET`, no JWKS): an operator who configured
  real auth has users with real tokens, and this shortcut must not bypass their issuer;
- `WEB_LOCAL_SIGN_IN` is on (the default);
- the TCP peer is a loopback address and the request carries no header a proxy adds to name a
  client (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `CF-Connecting-IP`, `True-Client-IP`, …): a
  reverse proxy on the same host makes remote users look local;
- the `Host` is exactly a loopback name or address with an optional port (no userinfo, path or
  fragment): a DNS-rebinding page (`evil.example` resolving to 127.0.0.1) sends its own host name;
- an `Origin`, when sent, is `http://` a loopback name at the service's own port: another site's
  page, or another local server's, cannot mint a token.
Anyone who passes these can already read the secret in the data folder (`agent-runtime token`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from app.auth.secret import load_or_create_secret
from app.auth.verify import mint_user_token
from app.settings import Settings

LOCAL_TENANT = "local"
LOCAL_SUB = "local"
LOCAL_TOKEN_TTL_SECONDS = 12 * 3600
_PROXY_HEADERS = frozenset({
    "forwarded", "x-real-ip", "x-client-ip", "x-cluster-client-ip", "x-original-forwarded-for",
    "cf-connecting-ip", "cf-connecting-ipv6", "true-client-ip", "fastly-client-ip", "x-appengine-user-ip",
    "x-azure-clientip", "x-envoy-external-address", "via",
})  # fmt: skip
_PROXY_PREFIXES = ("x-forwarded-",)
_LOOPBACK_HOST = re.compile(r"(?:localhost|127\.0\.0\.1|\[::1\])(?::(?P<port>[0-9]{1,5}))?", re.IGNORECASE)


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _proxied(headers: Mapping[str, str]) -> bool:
    return any(name.lower() in _PROXY_HEADERS or name.lower().startswith(_PROXY_PREFIXES) for name in headers)


def _origin_is_local(origin: str, port: int | None) -> bool:
    try:
        parts = urlsplit(origin)
        origin_port = parts.port or 80
    except ValueError:
        return False
    authority = parts.netloc
    return (
        parts.scheme == "http"
        and not (parts.path or parts.query or parts.fragment)
        and _LOOPBACK_HOST.fullmatch(authority) is not None
        and (port is None or origin_port == port)
    )


def refusal(settings: Settings, *, peer: str | None, headers: Mapping[str, str], port: int | None = None) -> str | None:
    """Why this request may not have a local token, or None when it may; `port` is the service's."""
    if settings.auth.jwt_secret or settings.auth.jwks_url:
        return "Local sign-in is off: this service is configured with its own authentication"
    if not settings.http.web_local_sign_in:
        return "Local sign-in is off (WEB_LOCAL_SIGN_IN=false)"
    if not _is_loopback(peer) or _proxied(headers):
        return "Local sign-in works only from the machine that runs the service (127.0.0.1)"
    if _LOOPBACK_HOST.fullmatch(headers.get("host", "")) is None:
        return "Local sign-in works only at http://127.0.0.1 or http://localhost"
    origin = headers.get("origin")
    if origin is not None and not _origin_is_local(origin, port):
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
