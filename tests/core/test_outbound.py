from __future__ import annotations

import pytest

from app.core.outbound import OutboundBlocked, check_outbound_url


async def _public(host: str, port: int) -> list[str]:
    return ["93.184.216.34"]


async def _rebound(host: str, port: int) -> list[str]:
    return ["93.184.216.34", "10.1.2.3"]


async def _nothing(host: str, port: int) -> list[str]:
    return []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost/v1",
        "http://10.0.0.7/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[::1]:11434/",
        "http://[::ffff:127.0.0.1]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://224.0.0.1/",
    ],
)
async def test_internal_targets_are_refused(url: str) -> None:
    with pytest.raises(OutboundBlocked, match="private, loopback or link-local"):
        await check_outbound_url(url, [])


async def test_a_public_address_passes() -> None:
    await check_outbound_url("https://8.8.8.8/v1", [])
    await check_outbound_url("https://api.example.com/v1", [], resolve=_public)


async def test_a_name_with_any_internal_address_is_refused() -> None:
    with pytest.raises(OutboundBlocked, match="api.example.com resolves to a private"):
        await check_outbound_url("https://api.example.com/v1", [], resolve=_rebound)


async def test_a_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(OutboundBlocked, match="does not resolve"):
        await check_outbound_url("https://nowhere.example/v1", [], resolve=_nothing)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:11434/v1", ["127.0.0.1"]),
        ("http://LocalHost:8080/", ["localhost"]),
        ("http://10.2.3.4/", ["10.0.0.0/8"]),
        ("http://[::1]:9000/", ["::1"]),
        ("http://192.168.0.9/", ["*"]),
    ],
)
async def test_an_operator_allowance_lets_internal_hosts_through(url: str, allowed: list[str]) -> None:
    await check_outbound_url(url, allowed)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://8.8.8.8/", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("https://user:secret@8.8.8.8/", "credentials"),
        ("https:///path", "no host"),
        ("https://8.8.8.8:99999/", "invalid port"),
        ("http://[::1/", "malformed"),
        ("http://[not-an-ip]/", "malformed"),
    ],
)
async def test_malformed_urls_are_refused_without_echoing_credentials(url: str, reason: str) -> None:
    with pytest.raises(OutboundBlocked, match=reason) as caught:
        await check_outbound_url(url, [])
    assert "secret" not in str(caught.value)


async def test_an_allowance_for_one_host_does_not_cover_another() -> None:
    with pytest.raises(OutboundBlocked):
        await check_outbound_url("http://10.0.0.8/", ["10.0.0.7", "internal.example"])
