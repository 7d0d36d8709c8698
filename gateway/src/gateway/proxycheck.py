"""A start-up check for a missing TRUSTED_PROXIES: one private address sending everything.

Behind an ingress whose address is not trusted, every request seems to come from the
ingress, so every client shares one rate-limit bucket. During the gateway's first minute
the client addresses are watched; if all of them were one private (non-loopback) address,
a warning says so. After the minute the check costs one attribute read per request.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

WATCH_S = 60.0


class SoleAddressWatch:
    """Watches client addresses for ``watch_s`` from creation, then warns or stays quiet."""

    def __init__(
        self, watch_s: float = WATCH_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.clock = clock
        self.deadline = clock() + watch_s
        self.watching = True
        self.sole: str | None = None
        self.requests = 0

    def observe(self, address: str) -> None:
        """Note one request's client address (while the first minute lasts)."""
        if not self.watching:
            return
        if self.clock() >= self.deadline:
            self.conclude()
            return
        self.requests += 1
        if self.sole is None:
            self.sole = address
        elif address != self.sole:
            self.watching = False  # two clients: the gateway does see who calls

    async def conclude_at_deadline(self) -> None:
        """Conclude once the watch is over, however few requests came (run it as a task)."""
        await asyncio.sleep(max(0.0, self.deadline - self.clock()))
        self.conclude()

    def conclude(self) -> bool:
        """Stop watching; warn (and return True) when one private address sent everything."""
        if not self.watching:
            return False
        self.watching = False
        if self.sole is None or not _is_private_peer(self.sole):
            return False
        logger.warning(
            "every request of the first minute came from one private address: if the gateway "
            "is behind a proxy or ingress, set TRUSTED_PROXIES to its address range, or every "
            "client shares one rate-limit budget",
            extra={"address": self.sole, "requests": self.requests},
        )
        return True


def _is_private_peer(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    # Loopback is a developer's own machine (or a test), not an ingress.
    return ip.is_private and not ip.is_loopback
