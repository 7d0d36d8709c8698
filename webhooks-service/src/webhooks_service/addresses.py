"""Server-side request forgery guard: endpoint URLs must reach public addresses only.

A URL is refused unless it is ``https`` (``http`` too with WEBHOOK_ALLOW_PRIVATE=1), has a
host and no credentials, and every address its host resolves to is public: not loopback,
private, link-local, site-local, shared (CGNAT), multicast, unspecified or reserved, nor an
IPv6 address carrying one of those (IPv4-mapped, 6to4, Teredo, NAT64). WEBHOOK_ALLOW_PRIVATE=1
lifts the address rule (local development and tests), never the form rules; WEBHOOK_ALLOWED_HOSTS,
when set, is the only hosts an endpoint may name (a test stack's loopback, say). Production
refuses both (``Settings``, by ``names_a_private_host``).

A refusal tells the API's client that the host does not reach public addresses only, never
which address it found or what kind: that would map the internal network for whoever
registers endpoints. The address and its category go to the log (``REFUSAL_LOG``).

The check runs when an endpoint is registered or changed, and again at each delivery, on the
very addresses the connection then uses (``GuardedResolver``): a name that resolved to a
public address at registration may resolve to 127.0.0.1 later (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import SplitResult, urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolve = Callable[[str, int], Awaitable[list[str]]]
"""The addresses (as text) a host name resolves to; raises OSError when it does not."""

logger = logging.getLogger(__name__)

MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_S = 5.0
CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
NOT_PUBLIC = "must reach public addresses only (its host resolves to one that is not)"
REFUSAL_LOG = "webhook URL refused: its host resolves to an address that is not public"
LOOPBACK_NAMES = ("localhost", "localhost.")  # and every name under .localhost (RFC 6761)


class UnsafeUrlError(ValueError):
    """The URL may not be used as an endpoint; the message says why (for the API's client)."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo client, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not be reached (a category); None when it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = embedded_ipv4(address)
        if carried is not None:
            reason = refusal(carried)
            return f"{reason} (inside an IPv6 address)" if reason else None
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "site-local"  # fec0::/10: deprecated (RFC 3879), still routed inside some sites
    if address.is_multicast:
        return "multicast"
    if address in CGNAT:
        return "shared (CGNAT)"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


def names_a_private_host(host: str) -> bool:
    """Whether ``host`` is, by its spelling alone, an address or name that is not public: an
    IP literal ``refusal`` refuses, or ``localhost`` (and names under it). Other names are
    only known once resolved (``UrlGuard.check``)."""
    name = host.strip().lower().strip("[]")
    if name in LOOPBACK_NAMES or name.rstrip(".").endswith(".localhost"):
        return True
    literal = _literal_address(name.split("%")[0])
    return literal is not None and refusal(literal) is not None


async def resolve_host(host: str, port: int) -> list[str]:
    """The host's addresses, by the system resolver in a thread (never on the event loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class UrlGuard:
    """The one place the rules above are applied."""

    def __init__(
        self,
        *,
        allow_private: bool,
        allowed_hosts: Iterable[str] = (),
        resolve: Resolve = resolve_host,
    ) -> None:
        self.allow_private = allow_private
        # When given, the only hosts an endpoint may name (test stacks: their own loopback).
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)
        self.resolve = resolve

    def check_form(self, url: str) -> SplitResult:
        """The URL's parts, or UnsafeUrlError for a URL that is not acceptable in form."""
        if len(url) > MAX_URL_LENGTH:
            raise UnsafeUrlError(f"must be at most {MAX_URL_LENGTH} characters")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
        except ValueError:
            raise UnsafeUrlError("is not a valid URL") from None
        schemes = ("https", "http") if self.allow_private else ("https",)
        if parts.scheme not in schemes:
            raise UnsafeUrlError(f"must be an {' or '.join(schemes)} URL")
        if not parts.hostname:
            raise UnsafeUrlError("must name a host")
        if self.allowed_hosts and parts.hostname not in self.allowed_hosts:
            raise UnsafeUrlError(
                f"must name one of the allowed hosts: {', '.join(sorted(self.allowed_hosts))}"
            )
        if parts.username is not None or parts.password is not None:
            raise UnsafeUrlError("must not contain credentials")
        if parts.fragment:
            raise UnsafeUrlError("must not contain a fragment")
        if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
            raise UnsafeUrlError("must not contain spaces or control characters")
        return parts

    def check_target(self, url: str) -> SplitResult:
        """``check_form``, and the address a URL names itself (host names are checked where they
        are resolved: ``check``, ``GuardedResolver``)."""
        parts = self.check_form(url)
        literal = _literal_address(parts.hostname or "")
        if literal is not None:
            self.check_addresses(str(literal), [str(literal)])
        return parts

    async def check(self, url: str) -> None:
        """UnsafeUrlError unless ``url`` is acceptable and its host resolves to public addresses."""
        parts = self.check_target(url)
        host = parts.hostname or ""
        if self.allow_private or _literal_address(host) is not None:
            return
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            addresses = await asyncio.wait_for(self.resolve(host, port), RESOLVE_TIMEOUT_S)
        except (OSError, TimeoutError, UnicodeError):
            raise UnsafeUrlError(f"names a host that does not resolve ({host})") from None
        self.check_addresses(host, addresses)

    def check_addresses(self, host: str, addresses: Iterable[str]) -> None:
        """UnsafeUrlError when ``host`` resolved to no address, or to any that is not public."""
        if self.allow_private:
            return
        found = False
        for text in addresses:
            found = True
            # A scoped IPv6 address (fe80::1%eth0) is link-local whatever its scope.
            address = ipaddress.ip_address(text.split("%")[0])
            reason = refusal(address)
            if reason is not None:
                # The detail is the operator's (an internal address), not the API client's.
                logger.warning(
                    REFUSAL_LOG, extra={"host": host, "address": str(address), "reason": reason}
                )
                raise UnsafeUrlError(NOT_PUBLIC)
        if not found:
            raise UnsafeUrlError(f"names a host that does not resolve ({host})")


def _literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


class UnsafeAddressError(OSError):
    """A delivery's host resolved to an address that is not public (aiohttp reports it)."""


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, refusing to hand out addresses the guard refuses."""

    def __init__(self, guard: UrlGuard, resolver: AbstractResolver | None = None) -> None:
        self.guard = guard
        self.resolver = resolver or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self.resolver.resolve(host, port, family)
        try:
            self.guard.check_addresses(host, [result["host"] for result in results])
        except UnsafeUrlError as error:
            raise UnsafeAddressError(str(error)) from None
        return results

    async def close(self) -> None:
        await self.resolver.close()
