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
        "http://[64:ff9b::7f00:1]/",
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data",
        "http://[64:ff9b::c0a8:101]/",
        "http://[64:ff9b:1::a00:1]/",
        "http://[64:ff9b:1:7f00:1::]/",
        "http://[2002:7f00:1::]/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        "http://[::127.0.0.1]/",
        "http://[::a00:1]/",
        "http://[::]/",
        "http://[::ffff:0:7f00:1]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[fec0::1]/",
        "http://[5f00::1]/",
        "http://[3fff::1]/",
        "http://[2001:db8::1]/",
        "http://[100::1]/",
        "http://[ff0e::1]/",
        "http://2130706433/",
        "http://0x7f.1/",
    ],
)
async def test_internal_targets_are_refused(url: str) -> None:
    with pytest.raises(OutboundBlocked, match="private, loopback or link-local") as caught:
        await check_outbound_url(url, [])
    assert url.split("/")[2].strip("[]") not in str(caught.value)


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::a9fe:a9fe", "2002:7f00:1::", "::ffff:10.0.0.1", "::127.0.0.1", "fd12::1", "64:ff9b:1::808:808"],
)
async def test_a_name_resolving_to_an_ipv6_form_of_an_internal_address_is_refused(address: str) -> None:
    async def nat64(host: str, port: int) -> list[str]:
        return [address]

    with pytest.raises(OutboundBlocked, match="private, loopback or link-local"):
        await check_outbound_url("https://api.example.com/v1", [], resolve=nat64)


@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b::808:808]/",
        "http://[2002:808:808::1]/",
        "http://[::ffff:8.8.8.8]/",
        "http://[2606:4700::1111]/",
    ],
)
async def test_ipv6_forms_of_public_addresses_pass(url: str) -> None:
    await check_outbound_url(url, [])


async def test_a_public_address_passes() -> None:
    await check_outbound_url("https://8.8.8.8/v1", [])
    await check_outbound_url("https://api.example.com/v1", [], resolve=_public)


async def test_a_name_with_any_internal_address_is_refused() -> None:
    with pytest.raises(OutboundBlocked, match="resolves to a private"):
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
