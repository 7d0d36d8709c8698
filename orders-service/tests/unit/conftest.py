"""Fakes of the unit tests: the stores and the unit of work of ``orders_service.ports`` in
memory, with the database's semantics (conditional writes, one claim per key, rollback), the
upstreams (``api_testkit.upstream_fakes``) and a clock. Test modules get them through the
fixtures below; the integration tests have the real ones (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson
import pytest

from api_shared.events.history import History
from api_testkit.upstream_fakes import FakeBookCatalog, FakeUserDirectory
from orders_service.events import CATALOG, event_type
from orders_service.models import IdempotencyRecord, IdempotencyState, Order
from orders_service.ports import OrderQuery, OrderValues, StoredItems, StoredResponse

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FakeUnitOfWork:
    """Transactions over the fake stores: an error inside one puts back what it wrote."""

    def __init__(self) -> None:
        self.stores: list[FakeOrders | FakeIdempotencyRecords | FakeEventLog] = []
        self.depth = 0
        self.committed = 0
        self.rolled_back = 0

    @property
    def open(self) -> bool:
        return self.depth > 0

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        saved = [copy.deepcopy(store.rows) for store in self.stores]
        self.depth += 1
        try:
            yield
        except BaseException:
            for store, rows in zip(self.stores, saved, strict=True):
                store.rows = rows
            self.rolled_back += 1
            raise
        else:
            self.committed += 1
        finally:
            self.depth -= 1


class FakeOrders:
    """An in-memory OrderStore. Every write must happen inside a unit of work.

    ``rivals`` stages races: each conditional write first lets the next rival write its
    changes to the order (a writer that got in between the read and the write), and so finds
    the order at a newer version.
    """

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self.uow = uow
        uow.stores.append(self)
        self.rows: dict[UUID, Order] = {}
        self.rivals: list[dict[str, Any]] = []
        self.write_attempts = 0

    def _writing(self) -> None:
        assert self.uow.open, "an order changed outside a unit of work"
        self.write_attempts += 1

    def _rival_wins(self, order_id: UUID) -> None:
        row = self.rows.get(order_id)
        if self.rivals and row is not None:
            for name, value in self.rivals.pop(0).items():
                setattr(row, name, value)
            row.version += 1

    async def get(self, order_id: UUID) -> Order | None:
        row = self.rows.get(order_id)
        return copy.copy(row) if row is not None else None  # a read, as a query returns it

    async def create(
        self, *, user_id: UUID, items: StoredItems, note: str | None, now: datetime
    ) -> Order:
        self._writing()
        order = Order.pending(user_id=user_id, items=items, note=note, now=now)
        self.rows[order.id] = copy.copy(order)
        return order

    async def update_if_version(
        self, order: Order, values: OrderValues, *, now: datetime
    ) -> Order | None:
        self._writing()
        self._rival_wins(order.id)
        row = self.rows.get(order.id)
        if row is None or row.version != order.version:
            return None
        row.items, row.note, row.status = values.items, values.note, values.status
        row.updated_at, row.version = now, row.version + 1
        return copy.copy(row)

    async def of_user(self, user_id: UUID) -> list[Order]:
        rows = sorted(
            (row for row in self.rows.values() if row.user_id == user_id),
            key=lambda row: (row.created_at, row.id),
        )
        return [copy.copy(row) for row in rows]

    async def delete_if_version(self, order: Order) -> bool:
        self._writing()
        self._rival_wins(order.id)
        row = self.rows.get(order.id)
        if row is None or row.version != order.version:
            return False
        del self.rows[order.id]
        return True

    async def page(self, query: OrderQuery) -> tuple[list[Order], int]:
        rows = [
            row
            for row in self.rows.values()
            if query.user_id in (None, row.user_id) and query.status in (None, row.status)
        ]
        rows.sort(key=lambda row: (getattr(row, query.sort), row.id), reverse=query.descending)
        window = rows[query.offset : query.offset + query.limit]
        return [copy.copy(row) for row in window], len(rows)


class FakeEventLog:
    """An in-memory EventLog: (change, order id) in order; recording outside a unit of work,
    or a change the catalog does not declare, fails, as the outbox refuses to."""

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self.uow = uow
        uow.stores.append(self)
        self.rows: list[tuple[str, UUID]] = []

    async def record(self, change: str, order: Order) -> None:
        assert self.uow.open, "an event recorded outside a unit of work"
        CATALOG.check(event_type(change))
        self.rows.append((change, order.id))

    async def history(self, order_id: UUID, *, after: int, limit: int) -> History:
        """The order's events as documents numbered 1, 2, 3… (derived from ``rows``, so a
        rolled-back change has none)."""
        changes = [change for change, subject in self.rows if subject == order_id]
        documents = [
            {"id": f"{order_id}-{sequence}", "type": event_type(change), "sequence": sequence}
            for sequence, change in enumerate(changes, start=1)
            if sequence > after
        ]
        return History(documents[:limit], has_more=len(documents) > limit)


class FakeIdempotencyRecords:
    """An in-memory IdempotencyStore: one record per (user, key), fenced by its claim token."""

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self.uow = uow
        uow.stores.append(self)
        self.rows: dict[tuple[UUID, str], IdempotencyRecord] = {}

    def _by_id(self, record_id: UUID) -> IdempotencyRecord | None:
        return next((row for row in self.rows.values() if row.id == record_id), None)

    async def insert_claim(
        self, *, user_id: UUID, key: str, fingerprint: str, token: UUID, now: datetime
    ) -> UUID | None:
        if (user_id, key) in self.rows:
            return None
        record = IdempotencyRecord.claimed(
            user_id=user_id, key=key, fingerprint=fingerprint, token=token, now=now
        )
        self.rows[user_id, key] = record
        return record.id

    async def find(self, *, user_id: UUID, key: str) -> IdempotencyRecord | None:
        row = self.rows.get((user_id, key))
        return copy.copy(row) if row is not None else None

    async def take_over(self, record: IdempotencyRecord, *, token: UUID, now: datetime) -> bool:
        row = self._by_id(record.id)
        if row is None or row.claim_token != record.claim_token:
            return False
        if row.state != IdempotencyState.IN_PROGRESS:
            return False
        row.claim_token, row.claimed_at = token, now
        return True

    async def complete(self, record_id: UUID, *, token: UUID, response: StoredResponse) -> bool:
        assert self.uow.open, "a response stored outside the unit of work of its order"
        row = self._by_id(record_id)
        if row is None or row.claim_token != token or row.state != IdempotencyState.IN_PROGRESS:
            return False
        row.state, row.response_status = IdempotencyState.COMPLETED, response.status
        row.response_body = orjson.dumps(response.body).decode()
        row.response_headers = response.headers
        return True

    async def release(self, record_id: UUID, *, token: UUID) -> None:
        row = self._by_id(record_id)
        if row is None or row.claim_token != token:
            return
        if row.state == IdempotencyState.IN_PROGRESS:
            del self.rows[row.user_id, row.key]

    async def delete_if_expired(self, record_id: UUID, *, cutoff: datetime) -> None:
        row = self._by_id(record_id)
        if row is not None and row.created_at <= cutoff:
            del self.rows[row.user_id, row.key]

    async def delete_expired(self, *, cutoff: datetime) -> int:
        expired = [key for key, row in self.rows.items() if row.created_at <= cutoff]
        for key in expired:
            del self.rows[key]
        return len(expired)


@pytest.fixture
def uow() -> FakeUnitOfWork:
    return FakeUnitOfWork()


@pytest.fixture
def orders(uow: FakeUnitOfWork) -> FakeOrders:
    return FakeOrders(uow)


@pytest.fixture
def event_log(uow: FakeUnitOfWork) -> FakeEventLog:
    return FakeEventLog(uow)


@pytest.fixture
def records(uow: FakeUnitOfWork) -> FakeIdempotencyRecords:
    return FakeIdempotencyRecords(uow)


@pytest.fixture
def catalog() -> FakeBookCatalog:
    return FakeBookCatalog(("book-1", "book-2", "book-3"))


@pytest.fixture
def users() -> FakeUserDirectory:
    return FakeUserDirectory()


@pytest.fixture
def clock() -> Callable[[], datetime]:
    """A clock that stands still: the rules tested here do not depend on time."""
    return lambda: NOW
