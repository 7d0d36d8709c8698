"""The rules of changing orders, independent of HTTP: ownership, states, books, races.

The reads are ``queries.OrderReader``'s, which ``OrderService`` extends with the writes.
Storage is reached through ``orders_service.ports``; every order change is one unit of work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from api_shared.auth.principal import Principal
from api_shared.errors import (
    ConflictError,
    InvalidStateError,
    UnknownBookError,
)
from api_shared.output_only import NONE_GIVEN, OutputOnly
from orders_service import states
from orders_service.changes import CREATED, DELETED, PATCHED, REPLACED, change_name
from orders_service.idempotency import Claim, Clock, Idempotency, fingerprint
from orders_service.models import Order
from orders_service.ports import (
    BookCatalog,
    EventLog,
    IdempotencyStore,
    OrderStore,
    OrderValues,
    StoredItems,
    StoredResponse,
    UnitOfWork,
    UserDirectory,
    stored_items,
)
from orders_service.preconditions import IfMatch, require_match
from orders_service.queries import OrderReader, subject_id
from orders_service.schemas import (
    OrderCreate,
    OrderItemInput,
    OrderPatch,
    OrderPublic,
    OrderReplace,
)

# Conditional writes retry when another writer got in first; each round one writer wins,
# so this bounds how many concurrent writers of one order a request outlasts.
MAX_WRITE_ATTEMPTS = 100


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Creation:
    """The response to ``POST /orders``; ``replayed`` when it is a stored one sent again."""

    response: StoredResponse
    replayed: bool


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What became of a deleted user's orders."""

    deleted: int
    anonymised: int


Respond = Callable[[Order], StoredResponse]
"""How a created order is answered: the caller's, stored as is for an idempotent repeat."""


class OrderService(OrderReader):
    def __init__(
        self,
        orders: OrderStore,
        records: IdempotencyStore,
        uow: UnitOfWork,
        events: EventLog,
        catalog: BookCatalog,
        users: UserDirectory,
        clock: Clock = utc_now,
    ) -> None:
        super().__init__(orders, events, users)
        self.idempotency = Idempotency(records, clock)
        self.uow = uow
        self.catalog = catalog
        self.clock = clock

    # Writing

    async def create(
        self,
        principal: Principal,
        data: OrderCreate,
        *,
        respond: Respond,
        idempotency_key: str | None = None,
    ) -> Creation:
        """Create an order and answer it with ``respond``; with a key, at most once per key."""
        user_id = subject_id(principal)
        if idempotency_key is None:
            return Creation(await self._create(user_id, data, respond), replayed=False)
        # Shielded: a keyed creation runs to its end even if its client hangs up (a gateway
        # timeout, say). Its retry then finds the stored answer; cancelled midway, it could
        # leave its key claimed by nobody until the lease runs out (409 to every retry).
        response, replayed = await asyncio.shield(
            self.idempotency.once(
                user_id=user_id,
                key=idempotency_key,
                fingerprint=fingerprint(data.model_dump(mode="json")),
                work=lambda claim: self._create(user_id, data, respond, claim),
            )
        )
        return Creation(response, replayed)

    async def _create(
        self, user_id: UUID, data: OrderCreate, respond: Respond, claim: Claim | None = None
    ) -> StoredResponse:
        await self._check_books(data.items)
        items, now = _stored(data.items), self.clock()
        async with self.uow.transaction():
            order = await self.orders.create(user_id=user_id, items=items, note=data.note, now=now)
            await self.events.record(CREATED, order)
            response = respond(order)
            if claim is not None:
                await self.idempotency.complete(claim, response)
        return response

    async def replace(
        self,
        principal: Principal,
        order_id: str,
        data: OrderReplace,
        *,
        if_match: IfMatch | None,
        output_only: OutputOnly = NONE_GIVEN,
    ) -> Order:
        """Replace items and note; ``output_only`` fields must equal the order's (AIP-203)."""
        items = _stored(data.items)
        return await self._update(
            principal,
            order_id,
            if_match,
            lambda current: OrderValues(items, data.note, current.status),
            data.items,
            REPLACED,
            output_only,
        )

    async def patch(
        self,
        principal: Principal,
        order_id: str,
        patch: OrderPatch,
        *,
        if_match: IfMatch | None,
        output_only: OutputOnly = NONE_GIVEN,
    ) -> Order:
        """Merge ``patch``; ``output_only`` fields must equal the order's (AIP-203)."""
        items = _stored(patch.items) if patch.items is not None else None

        def merge(current: OrderValues) -> OrderValues:
            return OrderValues(
                items if items is not None else current.items,
                patch.note if patch.has("note") else current.note,
                patch.status if patch.status is not None else current.status,
            )

        return await self._update(
            principal, order_id, if_match, merge, patch.items, PATCHED, output_only
        )

    async def delete(
        self, principal: Principal, order_id: str, *, if_match: IfMatch | None
    ) -> None:
        for _ in range(MAX_WRITE_ATTEMPTS):
            order = await self._visible(principal, order_id)
            require_match(if_match, order.id, order.version)
            if not states.may_delete(states.role_of(principal), order.status):
                raise InvalidStateError(f"A {order.status} order cannot be deleted.")
            if await self._delete_recorded(order):
                return
        raise _too_busy()

    async def forget_user(self, user_id: UUID) -> Forgotten:
        """What a deleted user leaves: their orders a customer could delete (pending,
        cancelled) are deleted; the others (confirmed, shipped, delivered: business records)
        are kept with their note, the one free text, erased. Each change records its event.

        Idempotent: run again (a redelivered ``users.user.deleted``), it finds nothing to do.
        """
        deleted = anonymised = 0
        for _ in range(MAX_WRITE_ATTEMPTS):
            remaining = [
                order
                for order in await self.orders.of_user(user_id)
                if states.goes_with_user(order.status) or order.note is not None
            ]
            if not remaining:
                return Forgotten(deleted, anonymised)
            for order in remaining:
                # Lost to a concurrent change: the next round reads the order again.
                if states.goes_with_user(order.status):
                    deleted += await self._delete_recorded(order)
                else:
                    anonymised += await self._anonymise(order)
        raise _too_busy()

    async def purge_expired_idempotency_records(self) -> int:
        return await self.idempotency.purge_expired()

    # The parts

    async def _update(
        self,
        principal: Principal,
        order_id: str,
        if_match: IfMatch | None,
        change: Callable[[OrderValues], OrderValues],
        new_items: Sequence[OrderItemInput] | None,
        method: str,
        output_only: OutputOnly,
    ) -> Order:
        """Read, check, write only if nobody wrote meanwhile; on a lost race, start again.

        A lost race re-reads the order: with ``If-Match`` the re-read no longer matches (412);
        without it the change is applied again to the newer order, so no update is lost.
        The body's output-only fields are compared with each order read, after the caller
        was allowed to see it (their values are the order's) and after ``If-Match``.
        """
        books_checked = False
        for _ in range(MAX_WRITE_ATTEMPTS):
            order = await self._visible(principal, order_id)
            require_match(if_match, order.id, order.version)
            if output_only.given:
                output_only.check(OrderPublic.of(order).wire())
            current = OrderValues.of(order)
            wanted = change(current)
            if wanted == current:
                return order  # nothing changes: no write, same version and ETag
            states.check_change(states.role_of(principal), current, wanted)
            if wanted.items != current.items and new_items is not None and not books_checked:
                await self._check_books(new_items)
                books_checked = True
            async with self.uow.transaction():
                updated = await self.orders.update_if_version(order, wanted, now=self.clock())
                if updated is not None:
                    name = change_name(current.status, wanted.status, method)
                    await self.events.record(name, updated)
            if updated is not None:
                return updated
        raise _too_busy()

    async def _anonymise(self, order: Order) -> bool:
        """Erase ``order``'s note if unchanged since read, recording it (``patched``)."""
        values = OrderValues(order.items, None, order.status)
        async with self.uow.transaction():
            updated = await self.orders.update_if_version(order, values, now=self.clock())
            if updated is None:
                return False
            await self.events.record(PATCHED, updated)
        return True

    async def _delete_recorded(self, order: Order) -> bool:
        """Delete ``order`` if unchanged since read, recording its deletion with it."""
        async with self.uow.transaction():
            if not await self.orders.delete_if_version(order):
                return False
            await self.events.record(DELETED, order)
        return True

    async def _check_books(self, items: Sequence[OrderItemInput]) -> None:
        unknown = await self.catalog.unknown([item.book_id for item in items])
        if not unknown:
            return
        fields = {
            f"items.{index}.bookId": "is not in the catalog"
            for index, item in enumerate(items)
            if item.book_id in unknown
        }
        first = next(iter(fields))
        raise UnknownBookError(f"{first} names a book the catalog does not have.", fields=fields)


def _stored(items: Sequence[OrderItemInput]) -> StoredItems:
    return stored_items([(item.book_id, item.quantity) for item in items])


def _too_busy() -> ConflictError:
    return ConflictError("The order is being changed by others right now; try again.")
