"""Outbound URLs a tenant supplies (a credential's `base_url`, a webhook target): refuse targets
inside the service's own network unless an operator allows them.

The host is resolved off the event loop and every address it resolves to is judged, so a public
name that points at 127.0.0.1 is refused like the literal. Callers check when the URL is stored and
again before each use. What remains is a name that changes its answer between the check and the
connection (DNS rebinding); docs/security.md says so.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

RESOLVE_TIMEOUT_SECONDS = 5.0


class OutboundBlocked(ValueError):
    """The URL may not be fetched. The message names the host, never credentials or the path."""


async def check_outbound_url(url: str, allowed_hosts: Sequence[str], *, resolve: Resolver | None = None) -> None:
    """Raise `OutboundBlocked` unless `url` is http(s) and reaches only public addresses, or its host
    is in `allowed_hosts` (host names, IP addresses or CIDR networks; `*` allows every host)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError as exc:
        raise OutboundBlocked("the URL is malformed") from exc
    if parts.scheme not in ("http", "https"):
        raise OutboundBlocked("the URL must use http or https")
    if parts.username is not None or parts.password is not None:
        raise OutboundBlocked("the URL must not carry credentials")
    host = (hostname or "").rstrip(".").lower()
    if not host:
        raise OutboundBlocked("the URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise OutboundBlocked("the URL has an invalid port") from exc
    if host_allowed(host, allowed_hosts):
        return
    addresses = await (resolve or _resolve)(host, port)
    if not addresses:
        raise OutboundBlocked(f"{host} does not resolve")
    for address in addresses:
        if is_internal(ipaddress.ip_address(address.split("%", 1)[0])):
            raise OutboundBlocked(
                f"{host} resolves to a private, loopback or link-local address; an operator can allow it"
            )


def host_allowed(host: str, allowed_hosts: Sequence[str]) -> bool:
    literal = _ip_or_none(host)
    for entry in (item.strip().lower() for item in allowed_hosts):
        if entry == "*" or entry == host:
            return True
        if literal is not None and "/" in entry:
            try:
                if literal in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False


def is_internal(address: IpAddress) -> bool:
    """True for every address that is not globally routable (private, loopback, link-local, shared,
    reserved, unspecified) and for multicast; IPv4-mapped IPv6 is judged as its IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def _ip_or_none(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


async def _resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT_SECONDS):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError, ValueError) as exc:
        raise OutboundBlocked(f"{host} does not resolve") from exc
    return [str(info[4][0]) for info in infos]
