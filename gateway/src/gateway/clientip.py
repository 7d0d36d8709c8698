"""Who the client is, network-wise: ``X-Forwarded-For`` is believed only from trusted proxies."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

from sanic import Request

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_networks(specs: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``["10.0.0.0/8", "127.0.0.1"]`` → networks; a bare address is a /32 (or /128)."""
    return tuple(ipaddress.ip_network(spec.strip(), strict=False) for spec in specs if spec.strip())


def _is_trusted(address: str, trusted: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return _within(ip, trusted)


def _within(ip: IPAddress, trusted: tuple[IPNetwork, ...]) -> bool:
    return any(ip in network for network in trusted)


def hop_address(hop: str) -> IPAddress | None:
    """One ``X-Forwarded-For`` entry as an address, a port stripped (``203.0.113.7:4711``,
    ``[2001:db8::1]:443``); None when it is not an address (``unknown``, a name, garbage)."""
    hop = hop.strip()
    if hop.startswith("["):
        host, closed, port = hop[1:].partition("]")
        if not closed or (port and not (port[:1] == ":" and port[1:].isdigit())):
            return None
        hop = host
    elif hop.count(":") == 1:  # IPv4 with a port (an IPv6 address has at least two colons)
        hop, _, port = hop.partition(":")
        if not port.isdigit():
            return None
    try:
        return ipaddress.ip_address(hop)
    except ValueError:
        return None


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


class ClientAddresses:
    """Resolves each request's client once, behind the ``trusted`` proxies."""

    def __init__(
        self,
        trusted: tuple[IPNetwork, ...],
        on_client: Callable[[str], None] = lambda address: None,
    ) -> None:
        self.trusted = trusted
        self.on_client = on_client  # sees every client address (the start-up proxy check)

    def address_of(self, request: Request) -> tuple[str, str]:
        """The client's address and the ``X-Forwarded-For`` to send upstream (``client_of``);
        the address is kept on ``request.ctx.client_address`` (the access line's, and X-Real-IP
        upstream)."""
        ip, chain = client_of(request, self.trusted)
        request.ctx.client_address = ip
        self.on_client(ip)
        return ip, chain


def client_of(request: Request, trusted: tuple[IPNetwork, ...]) -> tuple[str, str]:
    """``client``, from ``request``'s peer and its ``X-Forwarded-For`` lines."""
    return client(peer_of(request), forwarded_for(request), trusted)


def client(peer: str, forwarded_for: str | None, trusted: tuple[IPNetwork, ...]) -> tuple[str, str]:
    """The client's address, and the ``X-Forwarded-For`` to send upstream.

    The client is the peer, unless the peer is a trusted proxy. Behind trusted proxies,
    walk ``X-Forwarded-For`` from the right and take the first address that is not itself a
    trusted proxy; anything to its left was written by the client and could be anything.
    An entry that is not an address (after stripping a port) means the chain cannot be
    read: the peer is the client then, never a name a client chose as its bucket key.
    The chain sent upstream is a trusted peer's extended by the peer, else the peer alone.
    """
    if not forwarded_for or not _is_trusted(peer, trusted):
        return peer, peer
    return _rightmost_untrusted(peer, forwarded_for, trusted), f"{forwarded_for}, {peer}"


def _rightmost_untrusted(peer: str, forwarded_for: str, trusted: tuple[IPNetwork, ...]) -> str:
    for hop in reversed(forwarded_for.split(",")):
        ip = hop_address(hop)
        if ip is None:
            return peer
        if not _within(ip, trusted):
            return str(ip)
    return peer
