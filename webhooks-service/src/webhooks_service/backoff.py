"""When a failed delivery is tried again: exponential backoff with jitter, for up to 24 h.

The default delays after each failed attempt are 5 s, 5 min, 30 min, 2 h, 5 h and 10 h (the
Standard Webhooks reference schedule, cut where it would pass a day): seven attempts, the
last about 17.6 h after the first. Each delay is jittered by ±``JITTER`` so that deliveries
failing together (a receiver down) do not all come back at the same instant.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

DEFAULT_DELAYS_S: tuple[float, ...] = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0)
MAX_SPAN_S = 24 * 3600.0
JITTER = 0.1


def next_delay(
    delays: Sequence[float],
    failed_attempts: int,
    *,
    uniform: Callable[[float, float], float] = random.uniform,
) -> float | None:
    """Seconds until the next attempt after ``failed_attempts`` failures; None: give up."""
    if failed_attempts < 1 or failed_attempts > len(delays):
        return None
    delay = delays[failed_attempts - 1]
    return delay * uniform(1 - JITTER, 1 + JITTER)
