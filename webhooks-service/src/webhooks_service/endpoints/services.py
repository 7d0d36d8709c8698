"""The rules of the webhooks API: who manages which endpoint, whose events it receives, safe
URLs, secrets sealed and shown once, rotations with a grace period, replays, test events.

Storage is reached through ``endpoints.ports``. Any authenticated user manages their
own endpoints; an admin manages every endpoint. An endpoint's ``audience`` is fixed at
creation: ``owner`` (only the events about its owner's own resources: ``audience``) for a
customer, ``all`` (every event of its types) or ``owner`` for an admin. A customer never sees
an endpoint that is not theirs to manage: it is 404, like one that does not exist.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from api_shared.auth import Principal
from api_shared.errors import ForbiddenError, InvalidStateError, NotFoundError
from api_shared.ids import parse_id
from api_shared.paging import PageRequest, choice
from api_shared.validation import validation_error
from webhooks_service.addresses import UnsafeUrlError, UrlGuard
from webhooks_service.clock import Clock, utc_now
from webhooks_service.endpoints.own_events import TEST_EVENT_TYPE, TEST_STREAM, endpoint_event
from webhooks_service.endpoints.ports import DeliveryHistory, EndpointStore
from webhooks_service.endpoints.schemas import EndpointCreate, EndpointPatch, SecretRotation
from webhooks_service.event_log import EventLogStore
from webhooks_service.models import (
    Attempt,
    Audience,
    Delivery,
    DeliveryStatus,
    DisabledReason,
    Endpoint,
)
from webhooks_service.secret_box import SecretBox
from webhooks_service.signing import new_secret

SORTS = ("createdAt", "updatedAt")
DEFAULT_SORT = "createdAt"
_SORT_COLUMNS = {"createdAt": "created_at", "updatedAt": "updated_at"}
DELIVERY_SORTS = ("createdAt",)
DELIVERY_DEFAULT_SORT = "-createdAt"
DELIVERY_FILTERS = {"status": choice(*(status.value for status in DeliveryStatus))}
NOT_FOUND = "No webhook endpoint has this id."


def _whole_second_after(moment: datetime) -> datetime:
    """``moment`` rounded up to the second: timestamps are shown to the second, and the one
    shown must be the moment itself (a receiver may rely on it)."""
    if moment.microsecond == 0:
        return moment
    return moment.replace(microsecond=0) + timedelta(seconds=1)


def manages(caller: Principal, endpoint: Endpoint) -> bool:
    """Whether ``caller`` may see and change ``endpoint``: an admin any; anyone else an
    ``owner`` endpoint they own. An ``all`` endpoint carries every user's data: its owner, an
    admin once, who has lost the role since, does not see it (nor its deliveries)."""
    if caller.is_admin:
        return True
    return endpoint.audience is Audience.OWNER and endpoint.owner_id == caller.subject


class WebhookService:
    def __init__(
        self,
        endpoints: EndpointStore,
        deliveries: DeliveryHistory,
        guard: UrlGuard,
        box: SecretBox,
        clock: Clock = utc_now,
        *,
        max_grace_s: int,
        log: EventLogStore | None = None,
    ) -> None:
        self.endpoints = endpoints
        self.deliveries = deliveries
        self.guard = guard
        self.box = box  # seals secrets before they are stored
        self.clock = clock
        self.max_grace_s = max_grace_s  # WEBHOOK_SECRET_GRACE_S: a rotation's default and most
        self.log = log  # the event log, which keeps the test events made here too

    def audience_for(self, caller: Principal, asked: object) -> Audience:
        """The audience of an endpoint ``caller`` registers, asking for ``asked`` (None: the
        default); 403 when a customer asks for ``all``. A route may ask it before it reads
        the rest of the body, so that a refused caller learns nothing else about it."""
        if caller.is_admin:
            return Audience.OWNER if asked == Audience.OWNER else Audience.ALL
        if asked == Audience.ALL:
            raise ForbiddenError("Only admins receive every user's events.")
        return Audience.OWNER

    async def create(self, caller: Principal, data: EndpointCreate) -> tuple[Endpoint, str]:
        """The new endpoint, owned by ``caller``, and its secret, which is stored sealed and
        returned this once."""
        audience = self.audience_for(caller, data.audience)  # before the URL is resolved
        await self._check_url(data.url)
        secret = new_secret()
        endpoint = await self.endpoints.create(
            url=data.url,
            event_types=data.event_types,
            description=data.description,
            secret=self.box.seal(secret),
            now=self.clock(),
            created_by=caller.subject,
            audience=audience,
        )
        return endpoint, secret

    async def list_endpoints(
        self, caller: Principal, page: PageRequest
    ) -> tuple[list[Endpoint], int]:
        """Every endpoint for an admin; the caller's own ``owner`` endpoints for anyone else
        (``manages``)."""
        everyone = caller.is_admin
        return await self.endpoints.page(
            sort=page.sort.column(_SORT_COLUMNS),
            descending=page.sort.descending,
            limit=page.limit,
            offset=page.offset,
            owner_id=None if everyone else caller.subject,
            audience=None if everyone else Audience.OWNER,
        )

    async def get(self, caller: Principal, raw_id: str) -> Endpoint:
        """The endpoint, if ``caller`` manages it; 404 otherwise, as for one that does not
        exist (a customer learns nothing of other users' endpoints). Every operation on one
        endpoint starts here; a route may call it before it reads the request's body or
        query, so that a refused caller learns nothing about what they sent."""
        endpoint_id = parse_id(raw_id)
        endpoint = await self.endpoints.get(endpoint_id) if endpoint_id else None
        if endpoint is None or not manages(caller, endpoint):
            raise NotFoundError(NOT_FOUND)
        return endpoint

    async def patch(self, caller: Principal, raw_id: str, patch: EndpointPatch) -> Endpoint:
        """Change the fields given. ``enabled: true`` on an ``all`` endpoint makes ``caller``
        (an admin: no one else manages one) its owner, answerable for it from now on; an
        ``owner`` endpoint keeps its owner whoever enables it (its events stay that user's).
        ``enabled: false`` disables it (restating it keeps the reason and time it was
        disabled)."""
        endpoint = await self.get(caller, raw_id)
        changes: dict[str, Any] = {name: getattr(patch, name) for name in patch.model_fields_set}
        if "url" in changes:
            await self._check_url(changes["url"])
        now = self.clock()
        if changes.get("enabled") is True:
            # Enabling also restarts the failure clock: the endpoint gets its full time again.
            changes |= {"disabled_reason": None, "disabled_at": None, "failing_since": None}
            if endpoint.audience is Audience.ALL:
                changes["owner_id"] = caller.subject
        elif changes.get("enabled") is False and endpoint.enabled:
            changes |= {"disabled_reason": DisabledReason.BY_ADMIN, "disabled_at": now}
        elif "enabled" in changes:
            del changes["enabled"]  # already disabled: its reason stands
        return await self.endpoints.update(endpoint, changes, now)

    async def delete(self, caller: Principal, raw_id: str) -> None:
        endpoint = await self.get(caller, raw_id)
        await self.endpoints.delete(endpoint.id)

    async def rotate_secret(
        self, caller: Principal, raw_id: str, rotation: SecretRotation
    ) -> tuple[Endpoint, str]:
        """A new secret, signing every delivery from now on; the one it replaces signs beside
        it for the grace period (``graceSeconds``, by default WEBHOOK_SECRET_GRACE_S and
        clamped to it, as page sizes are; 0 ends it at once). A secret an earlier rotation
        replaced stops at once."""
        endpoint = await self.get(caller, raw_id)
        asked = rotation.grace_seconds
        grace_s = self.max_grace_s if asked is None else min(asked, self.max_grace_s)
        now, secret = self.clock(), new_secret()
        kept = grace_s > 0
        changes = {
            "secret": self.box.seal(secret),
            # Sealed with the current key (it may be a legacy plaintext one).
            "previous_secret": (self.box.reseal(endpoint.secret) or endpoint.secret)
            if kept
            else None,
            "previous_secret_until": _whole_second_after(now + timedelta(seconds=grace_s))
            if kept
            else None,
        }
        return await self.endpoints.update(endpoint, changes, now), secret

    async def list_deliveries(
        self, caller: Principal, raw_id: str, page: PageRequest
    ) -> tuple[list[tuple[Delivery, list[Attempt]]], int]:
        endpoint = await self.get(caller, raw_id)
        status = page.filters.get("status")
        rows, total = await self.deliveries.page(
            endpoint.id,
            status=DeliveryStatus(status) if status else None,
            descending=page.sort.descending,
            limit=page.limit,
            offset=page.offset,
        )
        attempts = await self.deliveries.attempts_of(rows)
        return [(row, attempts[row.id]) for row in rows], total

    async def replay(
        self, caller: Principal, raw_id: str, raw_delivery_id: str
    ) -> tuple[Delivery, list[Attempt]]:
        """Send a finished (failed or delivered) delivery again, now, with a fresh schedule."""
        endpoint = await self.get(caller, raw_id)
        delivery_id = parse_id(raw_delivery_id)
        delivery = await self.deliveries.get(endpoint.id, delivery_id) if delivery_id else None
        if delivery is None:
            raise NotFoundError("This endpoint has no delivery with this id.")
        if not await self.deliveries.replay(delivery, self.clock()):
            raise InvalidStateError(
                "The delivery is still pending: it is retried on its own schedule."
            )
        attempts = await self.deliveries.attempts_of([delivery])
        return delivery, attempts[delivery.id]

    async def send_test_event(
        self, caller: Principal, raw_id: str
    ) -> tuple[Delivery, list[Attempt]]:
        """Queue a ``webhooks.endpoint.tested`` event for this endpoint alone: a delivery
        like any other (signed, retried, listed), due now. A disabled endpoint is 409
        INVALID_STATE: its deliveries would only wait."""
        endpoint = await self.get(caller, raw_id)
        if not endpoint.enabled:
            raise InvalidStateError("The endpoint is disabled: enable it to send it a test event.")
        now = self.clock()
        event = endpoint_event(
            TEST_EVENT_TYPE,
            str(endpoint.id),
            {"endpointId": str(endpoint.id), "requestedBy": caller.subject},
            now,
            stream=TEST_STREAM,
            user_id=caller.subject,  # the requester's id: redacted if they are deleted
        )
        delivery = await self.deliveries.queue(event, endpoint, now)
        if self.log is not None:
            await self.log.record(event, now)
        return delivery, []

    async def _check_url(self, url: str) -> None:
        try:
            await self.guard.check(url)
        except UnsafeUrlError as error:
            raise validation_error({"url": str(error)}) from None
