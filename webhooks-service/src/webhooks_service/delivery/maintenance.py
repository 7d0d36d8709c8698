"""The dispatcher's upkeep, at its start then every WEBHOOK_PURGE_INTERVAL_S (``Periodic``).

1. Seal again, with the key file's first key, every secret that is not: a plaintext one
   stored before secrets were sealed (or by an older replica during an upgrade), or one
   sealed with an older key (``secret_box``: how the key is rotated).
2. Forget the secrets that rotations replaced, once their grace period is over.
3. Delete the deliveries (with their attempts) created more than WEBHOOK_DELIVERY_RETENTION_S
   ago, whatever their status: they hold personal data. The deleted users remembered as
   long ago (or as long as the event log keeps events, if longer) are forgotten with them.
   The event log's events recorded more than EVENTS_HISTORY_RETENTION_S ago go too.
4. Disable the enabled endpoints none of whose attempts succeeded for WEBHOOK_DISABLE_AFTER_S
   (``Endpoint.failing_since``), with the reason ``failing``: each is logged (a warning
   naming it and its owner) and counted; its owner sees the reason on the endpoint, and is
   told: a ``webhooks.endpoint.disabled`` event (``endpoints.own_events``) is queued for the
   owner's other enabled endpoints that want that type and whose audience may have it
   (``endpoints.audience``: the event concerns the owner), kept in the event log, and logged.

Every step is idempotent, and conditional on what it read: several dispatchers may run it
at once (each endpoint is disabled, so told about, by one of them). A dispatcher that stops
between disabling an endpoint and queueing its event does not tell the owner: the endpoint
still shows why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from api_shared.representation import format_timestamp
from webhooks_service.clock import Clock
from webhooks_service.delivery.ports import DeliveryStore
from webhooks_service.endpoints import (
    DISABLED_EVENT_TYPE,
    NOTICE_STREAM,
    EndpointStore,
    endpoint_event,
    receivers,
)
from webhooks_service.event_log import EventLogStore
from webhooks_service.models import DisabledReason, Endpoint
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
        disable_after: timedelta,
        log: EventLogStore | None = None,
        log_retention: timedelta | None = None,
        on_disabled: Callable[[int], None] = lambda count: None,
        on_deliveries: Callable[[], None] = lambda: None,
        wait_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.endpoints, self.deliveries, self.box, self.clock = endpoints, deliveries, box, clock
        self.retention = retention
        self.log = log  # the event log: purged, and told of the events made here
        self.log_retention = log_retention or retention  # EVENTS_HISTORY_RETENTION_S
        self.disable_after = disable_after  # WEBHOOK_DISABLE_AFTER_S
        self.on_disabled = on_disabled  # how many endpoints it disabled (a metric)
        self.on_deliveries = on_deliveries  # new deliveries were written (wakes the deliverer)
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
            "eventsPurged": await self.log.purge(now - self.log_retention) if self.log else 0,
            # A deleted user is remembered as long as anything kept could still name them.
            "erasuresForgotten": await self.deliveries.forget_erasures(
                now - max(self.retention, self.log_retention)
            ),
            "endpointsDisabled": await self._disable_failing(now),
        }
        logger.info("webhook maintenance", extra=done)
        return done

    async def _disable_failing(self, now: datetime) -> int:
        disabled = await self.endpoints.disable_failing(now - self.disable_after, now)
        for endpoint in disabled:
            # The owner learns it from the endpoint (disabledReason "failing"); operators
            # from this line and the counter.
            logger.warning(
                "webhook endpoint disabled: its deliveries kept failing",
                extra={
                    "endpoint": str(endpoint.id),
                    "owner": endpoint.owner_id,
                    "reason": str(DisabledReason.FAILING),
                    "failingSince": endpoint.failing_since.isoformat()
                    if endpoint.failing_since
                    else None,
                },
            )
            await self._tell_owner(endpoint, now)
        if disabled:
            self.on_disabled(len(disabled))
        return len(disabled)

    async def _tell_owner(self, endpoint: Endpoint, now: datetime) -> None:
        """Queue a ``webhooks.endpoint.disabled`` event about ``endpoint`` for its owner's
        other endpoints that want it and may have it."""
        owner = endpoint.owner_id
        if owner is None:
            return  # registered before owners were recorded: nobody to tell
        event = endpoint_event(
            DISABLED_EVENT_TYPE,
            str(endpoint.id),
            {
                "endpointId": str(endpoint.id),
                "reason": str(DisabledReason.FAILING),
                "failingSince": _timestamp(endpoint.failing_since),
                "disabledAt": _timestamp(endpoint.disabled_at),
            },
            now,
            stream=NOTICE_STREAM,
            user_id=owner,  # about the owner: their owner endpoints may have it
        )
        if self.log is not None:
            await self.log.record(event, now)
        others = [e for e in await self.endpoints.enabled_owned(owner) if e.id != endpoint.id]
        added = await self.deliveries.add(event, receivers(others, event), now)
        logger.info(
            "webhook endpoint disabled: its owner told",
            extra={
                "endpoint": str(endpoint.id),
                "owner": owner,
                "event": event.id,
                "type": event.type,
                "deliveries": added,
            },
        )
        if added:
            self.on_deliveries()


def _timestamp(moment: datetime | None) -> str | None:
    return format_timestamp(moment) if moment is not None else None
