"""What the endpoint API's rules (``services``) and the dispatcher's parts need of the
endpoints' storage, and what the API does with an endpoint's deliveries, as small interfaces.

``endpoints.repository`` implements them on Tortoise. Every write that must not race is one
conditional call whose answer says who won (a replay, a failing endpoint disabled).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from webhooks_service.events import IncomingEvent
from webhooks_service.models import (
    Attempt,
    Audience,
    Delivery,
    DeliveryStatus,
    DisabledReason,
    Endpoint,
)
from webhooks_service.secret_box import SecretBox


class EndpointStore(Protocol):
    async def create(
        self,
        *,
        url: str,
        event_types: list[str],
        description: str,
        secret: str,
        now: datetime,
        created_by: str | None = None,
        audience: Audience = Audience.ALL,
    ) -> Endpoint:
        """A new enabled endpoint, owned by ``created_by``, for ``audience``."""
        ...

    async def get(self, endpoint_id: UUID) -> Endpoint | None: ...
    async def update(self, endpoint: Endpoint, changes: dict[str, Any], now: datetime) -> Endpoint:
        """Write ``changes`` (field name → value) to the endpoint and to ``endpoint``."""
        ...

    async def delete(self, endpoint_id: UUID) -> bool: ...
    async def page(
        self,
        *,
        sort: str,
        descending: bool,
        limit: int,
        offset: int,
        owner_id: str | None = None,
        audience: Audience | None = None,
    ) -> tuple[list[Endpoint], int]:
        """One page of endpoints (only ``owner_id``'s, only of ``audience``, when given) and
        how many there are; the id breaks sort ties."""
        ...

    async def enabled(self) -> list[Endpoint]:
        """The endpoints that take new deliveries."""
        ...

    async def enabled_owned(self, owner_id: str) -> list[Endpoint]:
        """The endpoints ``owner_id`` answers for that take new deliveries."""
        ...

    async def disable_owned(
        self,
        owner_id: str,
        reason: DisabledReason,
        now: datetime,
        audience: Audience | None = None,
    ) -> int:
        """Disable every enabled endpoint ``owner_id`` answers for (of ``audience`` only, when
        given); how many."""
        ...

    async def disable_failing(self, failing_before: datetime, now: datetime) -> list[Endpoint]:
        """Disable every enabled endpoint failing since before ``failing_before`` (reason
        ``failing``); the endpoints disabled, each by one caller only."""
        ...

    async def reseal(self, box: SecretBox) -> int:
        """Seal again with the box's first key every secret that is not; how many changed."""
        ...

    async def end_grace_periods(self, now: datetime) -> int:
        """Forget the replaced secrets whose grace period is over; how many."""
        ...


class DeliveryHistory(Protocol):
    """An endpoint's deliveries as the API shows them to whoever manages it: listed with
    their attempts, replayed, and the test events it queues (the dispatcher makes the others:
    ``delivery.ports.DeliveryStore``)."""

    async def queue(self, event: IncomingEvent, endpoint: Endpoint, now: datetime) -> Delivery:
        """A pending delivery of ``event`` (one the service made) to ``endpoint``, due now."""
        ...

    async def get(self, endpoint_id: UUID, delivery_id: UUID) -> Delivery | None: ...
    async def page(
        self,
        endpoint_id: UUID,
        *,
        status: DeliveryStatus | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> tuple[list[Delivery], int]: ...
    async def attempts_of(self, deliveries: Sequence[Delivery]) -> dict[UUID, list[Attempt]]: ...
    async def replay(self, delivery: Delivery, now: datetime) -> bool:
        """Make a finished delivery pending again, due now, and read ``delivery`` again;
        False (and nothing changed) when it is still pending."""
        ...
