"""The delivery loop waits out its poll interval only when nobody tells it there is work."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from api_testkit.events import eventually
from webhooks_service.delivery.deliverer import Deliverer

AN_HOUR_S = 3600.0


class CountingDeliveries:
    """A delivery store with nothing due, counting how often it is asked."""

    def __init__(self) -> None:
        self.claims = 0

    async def claim_due(self, **_: Any) -> list[Any]:
        self.claims += 1
        return []


def deliverer(deliveries: CountingDeliveries) -> Deliverer:
    return Deliverer(
        # A fake: the wake-up rules only claim; no delivery is due, so nothing is sent.
        deliveries,  # type: ignore[arg-type]
        guard=None,  # type: ignore[arg-type]
        box=None,  # type: ignore[arg-type]
        clock=lambda: datetime.now(UTC),
        timeout_s=1.0,
        retry_delays_s=(1.0,),
        poll_interval_s=AN_HOUR_S,
        concurrency=1,
    )


async def test_a_poke_ends_the_idle_wait_at_once() -> None:
    deliveries = CountingDeliveries()
    loop = deliverer(deliveries)
    await loop.start()
    try:

        async def claimed(times: int) -> bool:
            return deliveries.claims >= times

        await eventually(lambda: claimed(1), "the first round")
        loop.poke()
        await eventually(lambda: claimed(2), "a round right after the poke, not an hour later")
    finally:
        await loop.stop()


async def test_without_a_poke_the_loop_waits_for_its_poll_interval() -> None:
    deliveries = CountingDeliveries()
    loop = deliverer(deliveries)
    await loop.start()
    try:

        async def claimed_once() -> bool:
            return deliveries.claims >= 1

        await eventually(claimed_once, "the first round")
        for _ in range(20):
            await asyncio.sleep(0)  # every ready task gets its turn
        assert deliveries.claims == 1
    finally:
        await loop.stop()
