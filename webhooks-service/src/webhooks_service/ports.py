"""What the webhook rules and the dispatcher's parts (intake, delivery, upkeep) need of
storage, as small interfaces, with the values that cross them.

``webhooks_service.repository`` implements them on Tortoise. Every write that must not race
is one conditional call whose answer says who won (a claim, a replay, a redaction).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from webhooks_service.models import (
    Attempt,
    Audience,
    Delivery,
    DeliveryStatus,
    DisabledReason,
    Endpoint,
    LoggedEvent,
)
from webhooks_service.secret_box import SecretBox

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class IncomingEvent:
    """An event as the dispatcher took it from JetStream."""

    id: str
    type: str
    subject: str
    stream: str
    stream_sequence: int
    payload: str
    user_id: str | None = None  # whose personal data it carries (personal_data)
    time: datetime | None = None  # its own ``time``; None: it has none that reads as one


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt got: the receiver's status, or the error that stood in its way."""

    attempted_at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


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


class DeliveryStore(Protocol):
    async def add(self, event: IncomingEvent, endpoints: Iterable[Endpoint], now: datetime) -> int:
        """One pending delivery of ``event`` per endpoint (none twice); how many were new."""
        ...

    async def erase(self, user_id: str, now: datetime) -> int:
        """Remember that ``user_id`` was deleted and redact the deliveries carrying their
        data; how many were redacted."""
        ...

    async def purge(self, created_before: datetime) -> int: ...
    async def forget_erasures(self, erased_before: datetime) -> int: ...
    async def claim_due(
        self, *, now: datetime, lease: timedelta, limit: int
    ) -> list[tuple[Delivery, Endpoint, UUID]]:
        """Take up to ``limit`` due deliveries for ``lease``: each with its endpoint and the
        claim that records its outcome; concurrent dispatchers never take the same one."""
        ...

    async def record(
        self,
        delivery: Delivery,
        claim: UUID,
        outcome: Outcome,
        *,
        status: DeliveryStatus,
        next_attempt_at: datetime | None,
        failures: int,
        now: datetime,
    ) -> bool:
        """Store an attempt and the delivery's new state, if ``claim`` still holds it, and
        the endpoint's failure clock: a success stops it, a failure starts it if it was not
        running (``Endpoint.failing_since``)."""
        ...

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


class EventLogStore(Protocol):
    """The event log (``GET /api/events``): every event taken in or made here, once."""

    async def record(self, event: IncomingEvent, now: datetime) -> bool:
        """Keep ``event`` (redacted when its user was deleted); False when it was kept
        already (a redelivery: nothing changes)."""
        ...

    async def redact(self, user_id: str) -> int:
        """Redact every logged event carrying ``user_id``'s data, which then names no user;
        how many."""
        ...

    async def purge(self, recorded_before: datetime) -> int:
        """Delete the events recorded before ``recorded_before``; how many."""
        ...

    async def get(self, event_id: str, *, user_id: str | None) -> LoggedEvent | None:
        """The event ``event_id``; only if it is ``user_id``'s, unless None (an admin)."""
        ...

    async def page(
        self,
        *,
        user_id: str | None,
        event_type: str | None,
        subject: str | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> tuple[list[LoggedEvent], int]:
        """One page of events (only ``user_id``'s unless None; of ``event_type`` and
        ``subject`` when given) by ``time``, and how many there are."""
        ...
