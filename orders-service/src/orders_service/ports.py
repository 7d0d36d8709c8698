"""What the order rules need of storage and of other services, as small interfaces.

``orders_service.repository`` implements the stores on Tortoise, ``orders_service.clients``
the other services over HTTP; the unit tests, in memory. Every write that must not race is
one conditional call whose answer says who won. The other services' implementations raise
``api_shared.errors.UnavailableError`` when they cannot answer (unreachable, too slow, or an
answer that makes no sense), and nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from api_shared.events.history import History
from orders_service.models import IdempotencyRecord, Order, OrderStatus

StoredItems = list[dict[str, Any]]
"""Items as stored: ``[{"book_id": str, "quantity": int}, ...]``."""


def stored_items(pairs: Sequence[tuple[str, int]]) -> StoredItems:
    return [{"book_id": book_id, "quantity": quantity} for book_id, quantity in pairs]


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A response as sent the first time, to be sent again on a repeat."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OrderValues:
    """An order's writable values."""

    items: StoredItems
    note: str | None
    status: OrderStatus

    @classmethod
    def of(cls, order: Order) -> OrderValues:
        return cls(order.items, order.note, order.status)


@dataclass(frozen=True, slots=True)
class OrderQuery:
    """Which orders a page holds: of one user or all, of one status or all, sorted by a column."""

    user_id: UUID | None
    status: OrderStatus | None
    sort: str
    descending: bool
    limit: int
    offset: int


class UnitOfWork(Protocol):
    """The one place a transaction is opened."""

    def transaction(self) -> AbstractAsyncContextManager[None]:
        """One transaction: the store calls awaited inside it commit together, or none does."""
        ...


class OrderStore(Protocol):
    async def get(self, order_id: UUID) -> Order | None: ...

    async def of_user(self, user_id: UUID) -> list[Order]:
        """Every order of one user, oldest first."""
        ...

    async def create(
        self, *, user_id: UUID, items: StoredItems, note: str | None, now: datetime
    ) -> Order:
        """A new pending order, at version 1."""
        ...

    async def update_if_version(
        self, order: Order, values: OrderValues, *, now: datetime
    ) -> Order | None:
        """Write ``values`` only if the order still has ``order.version``.

        Of concurrent writers starting from the same version exactly one succeeds. Returns the
        order as written (its version one higher), or None when it changed or vanished meanwhile.
        """
        ...

    async def delete_if_version(self, order: Order) -> bool:
        """Delete the order only if it still has ``order.version``."""
        ...

    async def page(self, query: OrderQuery) -> tuple[list[Order], int]:
        """One page of orders and the count of all that match; the id breaks sort ties."""
        ...


class EventLog(Protocol):
    """Where the changes of orders are recorded (the outbox): inside the change's unit of
    work, so that an event commits, or rolls back, with its change."""

    async def record(self, change: str, order: Order) -> None:
        """``change``: created, replaced, patched, deleted or the new status."""
        ...

    async def history(self, order_id: UUID, *, after: int, limit: int) -> History:
        """The order's recorded events (still retained) with a ``sequence`` above ``after``,
        in sequence order, at most ``limit``: each its document as published."""
        ...


class IdempotencyStore(Protocol):
    """The records of ``orders_service.idempotency``: one per (user, key)."""

    async def insert_claim(
        self, *, user_id: UUID, key: str, fingerprint: str, token: UUID, now: datetime
    ) -> UUID | None:
        """Insert an in-progress record (committed at once); None when the key is taken."""
        ...

    async def find(self, *, user_id: UUID, key: str) -> IdempotencyRecord | None: ...

    async def take_over(self, record: IdempotencyRecord, *, token: UUID, now: datetime) -> bool:
        """Re-claim an abandoned in-progress record, unless someone else did first."""
        ...

    async def complete(self, record_id: UUID, *, token: UUID, response: StoredResponse) -> bool:
        """Store the response, if ``token`` still holds the claim."""
        ...

    async def release(self, record_id: UUID, *, token: UUID) -> None:
        """Delete an in-progress record, if ``token`` still holds the claim."""
        ...

    async def delete_if_expired(self, record_id: UUID, *, cutoff: datetime) -> None: ...

    async def delete_expired(self, *, cutoff: datetime) -> int:
        """Delete every record created at or before ``cutoff``; returns how many."""
        ...


class BookCatalog(Protocol):
    """books-graphql: which books exist."""

    async def unknown(self, book_ids: Collection[str]) -> set[str]:
        """The ids among ``book_ids`` that the catalog does not have (empty: all exist)."""
        ...


class UserDirectory(Protocol):
    """users-service: which users exist."""

    async def exists(self, user_id: UUID, *, authorization: str) -> bool:
        """Whether the user exists, asked with the caller's own ``Authorization`` header."""
        ...
