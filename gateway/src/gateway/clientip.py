"""Who the client is, network-wise: ``X-Forwarded-For`` is believed only from trusted proxies."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(specs: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``["10.0.0.0/8", "127.0.0.1"]`` → networks; a bare address is a /32 (or /128)."""
    return tuple(ipaddress.ip_network(spec.strip(), strict=False) for spec in specs if spec.strip())


def _is_trusted(address: str, trusted: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)


def client_ip(peer: str, forwarded_for: str | None, trusted: tuple[IPNetwork, ...]) -> str:
    """The client's address: the peer, unless the peer is a trusted proxy.

    Behind trusted proxies, walk ``X-Forwarded-For`` from the right and take the first
    address that is not itself a trusted proxy; anything to its left was written by the
    client and could be anything.
    """
    if not forwarded_for or not _is_trusted(peer, trusted):
        return peer
    for hop in reversed([part.strip() for part in forwarded_for.split(",")]):
        if hop and not _is_trusted(hop, trusted):
            return hop
    return peer


def forwarded_for_chain(
    peer: str, forwarded_for: str | None, trusted: tuple[IPNetwork, ...]
) -> str:
    """The ``X-Forwarded-For`` to send upstream: a trusted chain extended, else the peer alone."""
    if forwarded_for and _is_trusted(peer, trusted):
        return f"{forwarded_for}, {peer}"
    return peer
