"""What the dispatcher's parts (``intake``, ``deliverer``, ``maintenance``, ``user_changes``)
need of the deliveries' storage, as a small interface, with the value that crosses it.

``delivery.repository`` implements it on Tortoise. Every write that must not race is one
conditional call whose answer says who won (a claim, a recorded attempt, a redaction). The
endpoints themselves are read and changed through ``endpoints.ports.EndpointStore``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

from webhooks_service.events import IncomingEvent
from webhooks_service.models import Delivery, DeliveryStatus, Endpoint


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
