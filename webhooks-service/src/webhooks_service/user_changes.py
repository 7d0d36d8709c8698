"""What a user's event changes here, before the event is queued for the endpoints.

An endpoint answers to an admin, its owner (its creator, or the admin who last enabled it):
a webhook for ``*`` receives every user's email and every order, and must not go on doing so
on the word of someone who is no longer trusted with that. So when users-service says that
the owner is no longer an active admin (``users.user.updated`` with a role other than admin
or ``isActive`` false, or ``users.user.deleted``), every endpoint they own is disabled, with
the reason; an admin enables it again explicitly and becomes its owner. Nothing re-enables
an endpoint on its own (an owner promoted again does not get theirs back silently).

A deleted user's personal data also leaves the deliveries: every delivery carrying it is
redacted, and events about them that come later are stored redacted (``personal_data``,
``DeliveryRepository.erase``).

Handling an event twice changes nothing the second time (only enabled endpoints are
disabled, redacted deliveries no longer name their user), so JetStream's redelivery is
harmless. An update without a ``data`` object says nothing about the role and changes
nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from webhooks_service.models import DisabledReason
from webhooks_service.ports import Clock, DeliveryStore, EndpointStore, IncomingEvent

logger = logging.getLogger(__name__)

USER_UPDATED = "users.user.updated"
USER_DELETED = "users.user.deleted"
ADMIN = "admin"


def lost_standing(event: IncomingEvent) -> DisabledReason | None:
    """Why the user ``event`` is about (its subject) can no longer own endpoints; None if the
    event does not say so."""
    if event.type == USER_DELETED:
        return DisabledReason.OWNER_DELETED
    if event.type != USER_UPDATED:
        return None
    user = _data(event.payload)
    if user is None:
        return None
    if user.get("isActive") is False:
        return DisabledReason.OWNER_SUSPENDED
    if "role" in user and user["role"] != ADMIN:
        return DisabledReason.OWNER_NOT_ADMIN
    return None


def _data(payload: str) -> dict[str, Any] | None:
    try:
        document = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    data = document.get("data") if isinstance(document, dict) else None
    return data if isinstance(data, dict) else None


class UserChanges:
    """Applies a user's event to the endpoints that user owns and the deliveries about them."""

    def __init__(self, endpoints: EndpointStore, deliveries: DeliveryStore, clock: Clock) -> None:
        self.endpoints, self.deliveries, self.clock = endpoints, deliveries, clock

    async def apply(self, event: IncomingEvent) -> None:
        if event.type == USER_DELETED:
            redacted = await self.deliveries.erase(event.subject, self.clock())
            if redacted:
                logger.info(
                    "webhook deliveries of a deleted user redacted",
                    extra={"user": event.subject, "deliveries": redacted},
                )
        reason = lost_standing(event)
        if reason is None:
            return
        disabled = await self.endpoints.disable_owned(event.subject, reason, self.clock())
        if disabled:
            logger.warning(
                "webhook endpoints disabled: their owner is no longer an active admin",
                extra={"owner": event.subject, "reason": str(reason), "endpoints": disabled},
            )
