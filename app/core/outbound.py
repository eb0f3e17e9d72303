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
    """The URL may not be fetched. The message names neither the host nor credentials nor the path
    (a 422 never repeats its input)."""


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
        raise OutboundBlocked("the host does not resolve")
    for address in addresses:
        if is_internal(ipaddress.ip_address(address.split("%", 1)[0])):
            raise OutboundBlocked(
                "the host is or resolves to a private, loopback or link-local address; an operator can allow it"
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


_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_NOT_GLOBAL_V6 = tuple(
    ipaddress.ip_network(net) for net in ("2001::/32", "2001:db8::/32", "3fff::/20", "64:ff9b:1::/48")
)
"""Inside 2000::/3 yet not global (Teredo, documentation), plus NAT64's local-use prefix, which
this Python's tables do not know."""
_LAST_32_BITS = tuple(
    ipaddress.ip_network(net) for net in ("64:ff9b::/96", "::/96", "::ffff:0:0/96", "::ffff:0:0:0/96")
)
"""IPv6 forms whose last 32 bits are an IPv4 address the packet reaches: NAT64's well-known
prefix, IPv4-compatible, IPv4-mapped and IPv4-translated (SIIT)."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries (NAT64, 6to4, Teredo, compatible, mapped)."""
    found = [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)] if any(address in n for n in _LAST_32_BITS) else []
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def is_internal(address: IpAddress) -> bool:
    """True for every address that is not globally routable (private, loopback, link-local, shared,
    reserved, unspecified) and for multicast. An IPv6 address is judged by every IPv4 address it
    embeds, and outside global unicast (2000::/3) only those embedding forms may pass."""
    if isinstance(address, ipaddress.IPv4Address):
        return not address.is_global or address.is_multicast
    embedded = embedded_ipv4(address)
    if any(is_internal(inner) for inner in embedded):
        return True
    if embedded and address not in _GLOBAL_UNICAST:
        return False
    return (
        address not in _GLOBAL_UNICAST
        or any(address in net for net in _NOT_GLOBAL_V6)
        or not address.is_global
        or address.is_multicast
    )


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
        raise OutboundBlocked("the host does not resolve") from exc
    return [str(info[4][0]) for info in infos]
