"""Who the client is, network-wise: ``X-Forwarded-For`` is believed only from trusted proxies."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

from sanic import Request

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

IPV6_SITE_PREFIX = 64  # one subscriber's allocation: a caller rotates freely inside its /64


def parse_networks(specs: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``["10.0.0.0/8", "127.0.0.1"]`` → networks; a bare address is a /32 (or /128)."""
    return tuple(ipaddress.ip_network(spec.strip(), strict=False) for spec in specs if spec.strip())


def _is_trusted(address: str, trusted: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)


def forwarded_for(request: Request) -> str | None:
    """Every ``X-Forwarded-For`` line of ``request`` as one list (RFC 9110 §5.3), or None.

    A proxy may add its own line rather than extend the client's: reading only the first
    line would let the client's own line decide who it is.
    """
    lines: list[str] = request.headers.getall("x-forwarded-for", [])
    return ", ".join(lines) if lines else None


def peer_of(request: Request) -> str:
    """The address of the TCP peer (the client itself, or the last proxy)."""
    return request.conn_info.client_ip if request.conn_info else ""


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


# Parsing an address costs microseconds on every request; the clients of a moment are few.
@functools.lru_cache(maxsize=4096)
def address_key(address: str) -> str:
    """The part of an address that names one caller in rate-limit keys.

    IPv4: the address. IPv6: its /64, which one subscriber holds whole (an address per
    request costs it nothing); an IPv4-mapped IPv6 address is its IPv4 address. Anything
    that is not an address (a test client's name, say) is kept as it is.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_SITE_PREFIX), strict=False))
    return str(ip)


def forwarded_for_chain(
    peer: str, forwarded_for: str | None, trusted: tuple[IPNetwork, ...]
) -> str:
    """The ``X-Forwarded-For`` to send upstream: a trusted chain extended, else the peer alone."""
    if forwarded_for and _is_trusted(peer, trusted):
        return f"{forwarded_for}, {peer}"
    return peer
