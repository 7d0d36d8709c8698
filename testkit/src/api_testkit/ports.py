"""Free TCP ports on the loopback interface."""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 15000
ATTEMPTS = 200
# Every port this process handed out: a stack takes a dozen before its first process binds
# one, and two of them drawn alike would leave one process "address already in use".
_handed_out: set[int] = set()


def _below_ephemeral() -> tuple[int, int]:
    """The ports under the kernel's ephemeral range (Linux default 32768-60999)."""
    try:
        first = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    return LOWEST, max(LOWEST + 1000, first - 1)


def free_port() -> int:
    """A port nothing listens on right now (the caller binds it soon after).

    Chosen below the ephemeral range: a port that bind(0) hands out is from that range, the
    one outgoing connections take their source ports from, so a client connecting anywhere
    could hold it by the time the server binds it ("address already in use"). Never one this
    process handed out before: it may not be bound yet, or be bound again after a restart.
    """
    low, high = _below_ephemeral()
    for _ in range(ATTEMPTS):
        port = random.randint(low, high)  # noqa: S311 (spreading choices, not security)
        if port in _handed_out:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port found in {low}-{high} after {ATTEMPTS} tries")
