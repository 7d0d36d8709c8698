"""X-Forwarded-For is believed only when the peer is a trusted proxy."""

from __future__ import annotations

from gateway.clientip import client_ip, forwarded_for_chain, parse_networks

TRUSTED = parse_networks(["10.0.0.0/8", "127.0.0.1"])


def test_an_untrusted_peer_is_the_client_whatever_it_forwards() -> None:
    assert client_ip("203.0.113.9", "1.2.3.4", TRUSTED) == "203.0.113.9"


def test_behind_a_trusted_proxy_the_rightmost_untrusted_hop_is_the_client() -> None:
    assert client_ip("10.0.0.2", "6.6.6.6, 198.51.100.7, 10.0.0.5", TRUSTED) == "198.51.100.7"


def test_a_chain_of_only_trusted_hops_falls_back_to_the_peer() -> None:
    assert client_ip("127.0.0.1", "10.1.1.1", TRUSTED) == "127.0.0.1"


def test_the_forwarded_chain_is_extended_only_for_trusted_peers() -> None:
    assert forwarded_for_chain("127.0.0.1", "198.51.100.7", TRUSTED) == "198.51.100.7, 127.0.0.1"
    assert forwarded_for_chain("203.0.113.9", "spoofed", TRUSTED) == "203.0.113.9"
