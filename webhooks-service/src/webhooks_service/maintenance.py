"""The dispatcher's upkeep, at its start then every WEBHOOK_PURGE_INTERVAL_S (``Periodic``).

1. Seal again, with the key file's first key, every secret that is not: a plaintext one
   stored before secrets were sealed (or by an older replica during an upgrade), or one
   sealed with an older key (``secret_box``: how the key is rotated).
2. Forget the secrets that rotations replaced, once their grace period is over.
3. Delete the deliveries (with their attempts) created more than WEBHOOK_DELIVERY_RETENTION_S
   ago, whatever their status: they hold personal data. The deleted users remembered as
   long ago are forgotten with them.

Every step is idempotent, and conditional on what it read: several dispatchers may run it
at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from webhooks_service.ports import Clock, DeliveryStore, EndpointStore
from webhooks_service.secret_box import SecretBox

logger = logging.getLogger(__name__)


class Maintenance:
    """One round of upkeep per ``run``."""

    def __init__(
        self,
        endpoints: EndpointStore,
        deliveries: DeliveryStore,
        box: SecretBox,
        clock: Clock,
        *,
        retention: timedelta,
        wait_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.endpoints, self.deliveries, self.box, self.clock = endpoints, deliveries, box, clock
        self.retention = retention
        self.wait_ready = wait_ready  # the schema at its latest migration, say

    async def run(self) -> dict[str, int]:
        """One round; what it changed, by step (also logged)."""
        if self.wait_ready is not None:
            await self.wait_ready()
        now = self.clock()
        done = {
            "secretsResealed": await self.endpoints.reseal(self.box),
            "gracePeriodsEnded": await self.endpoints.end_grace_periods(now),
            "deliveriesPurged": await self.deliveries.purge(now - self.retention),
            "erasuresForgotten": await self.deliveries.forget_erasures(now - self.retention),
        }
        logger.info("webhook maintenance", extra=done)
        return done
