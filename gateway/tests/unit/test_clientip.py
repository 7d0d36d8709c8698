"""X-Forwarded-For is believed only when the peer is a trusted proxy."""

from __future__ import annotations

import pytest

from api_shared.ratelimit import IPV6_SITE_PREFIX, address_key
from gateway.clientip import client, parse_networks

TRUSTED = parse_networks(["10.0.0.0/8", "127.0.0.1"])


def client_ip(peer: str, forwarded_for: str | None) -> str:
    address, _ = client(peer, forwarded_for, TRUSTED)
    return address


def forwarded_for_chain(peer: str, forwarded_for: str | None) -> str:
    _, chain = client(peer, forwarded_for, TRUSTED)
    return chain


def test_an_untrusted_peer_is_the_client_whatever_it_forwards() -> None:
    assert client_ip("203.0.113.9", "1.2.3.4") == "203.0.113.9"


def test_behind_a_trusted_proxy_the_rightmost_untrusted_hop_is_the_client() -> None:
    assert client_ip("10.0.0.2", "6.6.6.6, 198.51.100.7, 10.0.0.5") == "198.51.100.7"


def test_a_chain_of_only_trusted_hops_falls_back_to_the_peer() -> None:
    assert client_ip("127.0.0.1", "10.1.1.1") == "127.0.0.1"


def test_the_forwarded_chain_is_extended_only_for_trusted_peers() -> None:
    assert forwarded_for_chain("127.0.0.1", "198.51.100.7") == "198.51.100.7, 127.0.0.1"
    assert forwarded_for_chain("203.0.113.9", "spoofed") == "203.0.113.9"


def test_ipv6_addresses_are_keyed_by_their_64_and_ipv4_as_they_are() -> None:
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::9")
    assert address_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:198.51.100.7") == "198.51.100.7"
    assert address_key("198.51.100.7") == "198.51.100.7"
    assert address_key("not-an-address") == "not-an-address"


def test_the_budgets_of_logins_and_sign_ups_key_ipv6_by_its_48() -> None:
    site = address_key("2001:db8:1:2::1", IPV6_SITE_PREFIX)

    assert site == "2001:db8:1::/48"
    assert address_key("2001:db8:1:ffff::9", IPV6_SITE_PREFIX) == site
    assert address_key("198.51.100.7", IPV6_SITE_PREFIX) == "198.51.100.7"


@pytest.mark.parametrize(
    ("chain", "client"),
    [
        ("198.51.100.7:4711, 10.0.0.5", "198.51.100.7"),
        ("[2001:db8::7]:443", "2001:db8::7"),
        ("2001:db8::7", "2001:db8::7"),
        ("198.51.100.7, 10.0.0.5:80", "198.51.100.7"),
    ],
)
def test_ports_are_stripped_from_forwarded_hops(chain: str, client: str) -> None:
    assert client_ip("10.0.0.2", chain) == client


@pytest.mark.parametrize(
    "chain",
    [
        "unknown",
        "198.51.100.7, attacker-chosen-key",
        "198.51.100.7, ",
        "[2001:db8::7",
        "198.51.100.7:http",
        "evil.example:80",
        "198.51.100.7, 300.1.1.1",
    ],
)
def test_a_hop_that_is_no_address_makes_the_peer_the_client(chain: str) -> None:
    # Each garbage hop would otherwise be a fresh bucket key of the client's choosing.
    assert client_ip("10.0.0.2", chain) == "10.0.0.2"
