"""The SSRF guard: which addresses are public, and which URLs may be endpoints."""

from __future__ import annotations

import ipaddress
import logging
import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from webhooks_service.addresses import (
    GuardedResolver,
    Resolve,
    UnsafeAddressError,
    UnsafeUrlError,
    UrlGuard,
    refusal,
)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fec0::1", "site-local"),
        ("feff:ffff::1", "site-local"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("100.127.255.254", "shared (CGNAT)"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 (a table row, not a bind)
        ("::", "unspecified"),
        ("240.0.0.1", "private"),
        ("192.0.2.10", "private"),
        ("::ffff:127.0.0.1", "loopback (inside an IPv6 address)"),
        ("::ffff:10.0.0.1", "private (inside an IPv6 address)"),
        ("::ffff:169.254.169.254", "link-local (inside an IPv6 address)"),
        ("2002:7f00:1::", "loopback (inside an IPv6 address)"),
        ("64:ff9b::a9fe:a9fe", "link-local (inside an IPv6 address)"),
        ("::7f00:1", "reserved"),
    ],
)
def test_an_address_that_is_not_public_is_refused_with_its_category(
    address: str, reason: str
) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "8.8.8.8",
        "1.1.1.1",
        "100.128.0.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
    ],
)
def test_a_public_address_is_allowed(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def _resolver(addresses: list[str]) -> Resolve:
    async def resolve(host: str, port: int) -> list[str]:
        return addresses

    return resolve


async def test_a_host_resolving_to_any_private_address_among_public_ones_is_refused() -> None:
    guard = UrlGuard(allow_private=False, resolve=_resolver(["93.184.215.14", "10.0.0.7"]))
    with pytest.raises(UnsafeUrlError, match="must reach public addresses only"):
        await guard.check("https://hooks.example.com/in")


@pytest.mark.parametrize(
    ("address", "reason"),
    [("10.0.0.7", "private"), ("fec0::5", "site-local"), ("169.254.169.254", "link-local")],
)
async def test_a_refusal_names_no_internal_address_and_logs_it_for_the_operator(
    caplog: pytest.LogCaptureFixture, address: str, reason: str
) -> None:
    guard = UrlGuard(allow_private=False, resolve=_resolver([address]))
    with (
        caplog.at_level(logging.WARNING, "webhooks_service.addresses"),
        pytest.raises(UnsafeUrlError) as refused,
    ):
        await guard.check("https://db.internal.example.com/in")
    assert address not in str(refused.value)
    assert reason not in str(refused.value)
    (record,) = caplog.records
    assert (record.host, record.address, record.reason) == (  # type: ignore[attr-defined]  # extras of the log call
        "db.internal.example.com",
        address,
        reason,
    )


async def test_a_host_resolving_to_public_addresses_only_is_allowed() -> None:
    guard = UrlGuard(allow_private=False, resolve=_resolver(["93.184.215.14"]))
    await guard.check("https://hooks.example.com/in")


async def test_a_host_that_does_not_resolve_is_refused() -> None:
    async def fail(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(UnsafeUrlError, match="does not resolve"):
        await UrlGuard(allow_private=False, resolve=fail).check("https://nowhere.invalid/")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://93.184.215.14/hook", "must be an https URL"),
        ("ftp://93.184.215.14/hook", "must be an https URL"),
        ("https:///hook", "must name a host"),
        ("https://user:pw@93.184.215.14/hook", "must not contain credentials"),
        ("https://93.184.215.14/hook#part", "must not contain a fragment"),
        ("https://93.184.215.14:port/hook", "is not a valid URL"),
        ("https://93.184.215.14/a b", "must not contain spaces"),
        ("https://" + "a" * 2050, "at most 2048"),
    ],
)
async def test_a_url_of_the_wrong_form_is_refused(url: str, reason: str) -> None:
    with pytest.raises(UnsafeUrlError, match=reason):
        await UrlGuard(allow_private=False, resolve=_resolver(["93.184.215.14"])).check(url)


async def test_with_allowed_hosts_no_other_host_is_accepted_even_if_public() -> None:
    guard = UrlGuard(
        allow_private=True, allowed_hosts=["127.0.0.1"], resolve=_resolver(["93.184.215.14"])
    )
    await guard.check("http://127.0.0.1:8080/hook")
    with pytest.raises(UnsafeUrlError, match=r"allowed hosts: 127\.0\.0\.1"):
        await guard.check("https://example.com/hook")
    with pytest.raises(UnsafeUrlError, match="allowed hosts"):
        guard.check_target("https://93.184.215.14/hook")


async def test_allowing_private_addresses_allows_http_and_loopback_but_not_other_schemes() -> None:
    guard = UrlGuard(allow_private=True, resolve=_resolver(["127.0.0.1"]))
    await guard.check("http://127.0.0.1:9000/hook")
    await guard.check("https://localhost/hook")
    with pytest.raises(UnsafeUrlError, match="https or http"):
        await guard.check("file:///etc/passwd")


class _FixedResolver(AbstractResolver):
    """What a DNS server under an attacker's control may answer at delivery time."""

    def __init__(self, address: str) -> None:
        self.address = address

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host, host=self.address, port=port, family=family, proto=0, flags=0
            )
        ]

    async def close(self) -> None:
        return None


async def test_a_host_resolving_to_loopback_at_delivery_time_is_refused() -> None:
    guard = UrlGuard(allow_private=False)
    resolver = GuardedResolver(guard, _FixedResolver("127.0.0.1"))
    with pytest.raises(UnsafeAddressError, match="public addresses only") as refused:
        await resolver.resolve("rebound.example.com", 443)
    assert "127.0.0.1" not in str(refused.value)


async def test_a_host_resolving_to_a_public_address_at_delivery_time_is_connected_to() -> None:
    resolver = GuardedResolver(UrlGuard(allow_private=False), _FixedResolver("93.184.215.14"))
    (result,) = await resolver.resolve("hooks.example.com", 443)
    assert result["host"] == "93.184.215.14"


def test_a_delivery_to_a_private_address_literal_is_refused_before_connecting() -> None:
    with pytest.raises(UnsafeUrlError, match="public addresses only"):
        UrlGuard(allow_private=False).check_target("https://169.254.169.254/latest")


def test_a_site_local_address_literal_is_refused() -> None:
    with pytest.raises(UnsafeUrlError, match="public addresses only"):
        UrlGuard(allow_private=False).check_target("https://[fec0::1]/hook")
