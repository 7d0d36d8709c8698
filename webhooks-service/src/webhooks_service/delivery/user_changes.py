"""What a user's event changes here, before the event is queued for the endpoints.

An endpoint answers to its owner. An ``all`` endpoint's (an admin, its creator or the admin
who last enabled it) receives every user's email and every order, and must not go on doing
so on the word of someone who is no longer trusted with that; an ``owner`` endpoint's (any
user) receives their own events only, and must not outlive their account. So when
users-service says that the owner

- is no longer an admin (``users.user.updated`` with a role other than admin), their ``all``
  endpoints are disabled (``owner-not-admin``), and only those: a customer's profile
  changes produce such events too, and leave their ``owner`` endpoints alone;
- was suspended (``isActive`` false) or deleted (``users.user.deleted``), every endpoint
  they own is disabled (``owner-suspended``, ``owner-deleted``). Disabled, not deleted: an
  admin still sees what was there (the deleted owner's deliveries are redacted anyway), and
  a suspension may be lifted;
- is no longer who held the account (``users.user.claimed``: the owner of its address took
  it back from someone who had opened it with that address, unverified), every endpoint of
  the account is disabled (``account-claimed``): those endpoints are the previous holder's,
  and must not receive the new holder's events. Disabled, not deleted: the new holder sees
  them, and deletes them (or, knowingly, enables one).

An admin enables an ``all`` endpoint again explicitly and becomes its owner; an ``owner``
endpoint is enabled again by its owner (or an admin) and keeps its owner. Nothing re-enables
an endpoint on its own (an owner promoted or reactivated does not get theirs back silently).

A deleted user's personal data also leaves the deliveries and the event log: every delivery
and logged event carrying it is redacted (a logged event then names no user: it leaves their
history), and events about them that come later are stored redacted (``personal_data``,
``DeliveryRepository.erase``, ``EventLogRepository.redact``).

Handling an event twice changes nothing the second time (only enabled endpoints are
disabled, redacted deliveries no longer name their user), so JetStream's redelivery is
harmless. An update without a ``data`` object says nothing about the role and changes
nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from webhooks_service.clock import Clock
from webhooks_service.delivery.ports import DeliveryStore
from webhooks_service.endpoints import EndpointStore
from webhooks_service.event_log import EventLogStore
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Audience, DisabledReason

logger = logging.getLogger(__name__)

USER_UPDATED = "users.user.updated"
USER_DELETED = "users.user.deleted"
USER_CLAIMED = "users.user.claimed"
ADMIN = "admin"


def lost_standing(event: IncomingEvent) -> DisabledReason | None:
    """Why the user ``event`` is about (its subject) can no longer own some endpoints
    (``affected``: which); None if the event does not say so."""
    if event.type == USER_DELETED:
        return DisabledReason.OWNER_DELETED
    if event.type == USER_CLAIMED:
        return DisabledReason.ACCOUNT_CLAIMED
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


def affected(reason: DisabledReason) -> Audience | None:
    """The audience of the owner's endpoints that ``reason`` disables; None: every one."""
    return Audience.ALL if reason is DisabledReason.OWNER_NOT_ADMIN else None


def _data(payload: str) -> dict[str, Any] | None:
    try:
        document = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    data = document.get("data") if isinstance(document, dict) else None
    return data if isinstance(data, dict) else None


class UserChanges:
    """Applies a user's event to the endpoints that user owns and the deliveries about them."""

    def __init__(
        self,
        endpoints: EndpointStore,
        deliveries: DeliveryStore,
        clock: Clock,
        log: EventLogStore | None = None,
    ) -> None:
        self.endpoints, self.deliveries, self.clock = endpoints, deliveries, clock
        self.log = log  # the event log, when this process keeps it (the dispatcher's intake)

    async def apply(self, event: IncomingEvent) -> None:
        if event.type == USER_DELETED:
            redacted = await self.deliveries.erase(event.subject, self.clock())
            if redacted:
                logger.info(
                    "webhook deliveries of a deleted user redacted",
                    extra={"user": event.subject, "deliveries": redacted},
                )
            logged = await self.log.redact(event.subject) if self.log is not None else 0
            if logged:
                logger.info(
                    "logged events of a deleted user redacted",
                    extra={"user": event.subject, "events": logged},
                )
        reason = lost_standing(event)
        if reason is None:
            return
        audience = affected(reason)
        disabled = await self.endpoints.disable_owned(event.subject, reason, self.clock(), audience)
        if disabled:
            logger.warning(
                "webhook endpoints disabled: their owner may no longer have them",
                extra={
                    "owner": event.subject,
                    "reason": str(reason),
                    "audience": str(audience) if audience else "any",
                    "endpoints": disabled,
                },
            )
