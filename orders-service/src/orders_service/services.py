"""The rules of the orders resource, independent of HTTP: ownership, states, books, races.

Storage is reached through ``orders_service.ports``; every order change is one unit of work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from api_shared.auth import Principal
from api_shared.errors import (
    ConflictError,
    ForbiddenError,
    InvalidStateError,
    NotFoundError,
    PreconditionFailedError,
    UnauthenticatedError,
    UnknownBookError,
)
from api_shared.events.history import History
from api_shared.ids import parse_id
from api_shared.output_only import NONE_GIVEN, OutputOnly
from api_shared.paging import FilterParser, PageRequest, choice
from orders_service import states
from orders_service.idempotency import Claim, Clock, Idempotency, fingerprint
from orders_service.models import Order, OrderStatus
from orders_service.ports import (
    BookCatalog,
    EventLog,
    IdempotencyStore,
    OrderQuery,
    OrderStore,
    OrderValues,
    StoredItems,
    StoredResponse,
    UnitOfWork,
    UserDirectory,
    stored_items,
)
from orders_service.preconditions import IfMatch, etag
from orders_service.schemas import (
    OrderCreate,
    OrderItemInput,
    OrderPatch,
    OrderPublic,
    OrderReplace,
)

SORTS = ("createdAt", "updatedAt")
DEFAULT_SORT = "createdAt"
_SORT_COLUMNS = {"createdAt": "created_at", "updatedAt": "updated_at"}

# What an order's events are named (orders.order.<name>): a status change by the new status.
CREATED, REPLACED, PATCHED, DELETED = "created", "replaced", "patched", "deleted"

# Conditional writes retry when another writer got in first; each round one writer wins,
# so this bounds how many concurrent writers of one order a request outlasts.
MAX_WRITE_ATTEMPTS = 100


def utc_now() -> datetime:
    return datetime.now(UTC)


def list_filters(principal: Principal) -> Mapping[str, FilterParser]:
    """The filters ``GET /orders`` allows this caller.

    ``userId`` is for admins only: a customer's list is already their own, so for a customer
    it is a filter that is not allowed (400 BAD_FILTER), like any other unknown parameter.
    """
    filters: dict[str, FilterParser] = {"status": choice(*OrderStatus)}
    if principal.is_admin:
        filters["userId"] = _uuid_filter
    return filters


def user_list_filters() -> Mapping[str, FilterParser]:
    """``GET /users/{id}/orders``: the path names the user; only ``status`` filters."""
    return {"status": choice(*OrderStatus)}


def _uuid_filter(raw: str) -> UUID:
    parsed = parse_id(raw)
    if parsed is None:
        raise ValueError("must be a UUID")
    return parsed


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


def _erasable(order: Order) -> bool:
    """Whether a deleted user's order goes with them: one they could have deleted."""
    return states.may_delete(states.Role.CUSTOMER, order.status)


Respond = Callable[[Order], StoredResponse]
"""How a created order is answered: the caller's, stored as is for an idempotent repeat."""


class OrderService:
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
        self.orders = orders
        self.idempotency = Idempotency(records, clock)
        self.uow = uow
        self.events = events
        self.catalog = catalog
        self.users = users
        self.clock = clock

    # Reading

    async def get(self, principal: Principal, order_id: str) -> Order:
        return await self._visible(principal, order_id)

    async def history(self, order: Order, *, after: int, limit: int) -> History:
        """``order``'s events after sequence ``after``, oldest first: for an order ``get``
        gave the caller (so a deleted order has none to show: 404 like ``get``)."""
        return await self.events.history(order.id, after=after, limit=limit)

    async def list_orders(
        self, principal: Principal, page: PageRequest, *, user_id: UUID | None = None
    ) -> tuple[list[Order], int]:
        """A page of orders: a customer's own; an admin's all, or one user's."""
        if not principal.is_admin:
            user_id = subject_id(principal)
        elif user_id is None:
            user_id = page.filters.get("userId")
        status = page.filters.get("status")
        query = OrderQuery(
            user_id=user_id,
            status=OrderStatus(status) if status is not None else None,
            sort=_SORT_COLUMNS[page.sort.field],
            descending=page.sort.descending,
            limit=page.limit,
            offset=page.offset,
        )
        return await self.orders.page(query)

    async def user_scope(self, principal: Principal, raw_id: str, *, authorization: str) -> UUID:
        """The user whose orders ``/users/{id}/orders`` lists, if the caller may see them.

        A customer naming anyone else is refused without looking the user up; an admin naming
        a user that users-service does not know gets 404.
        """
        user_id = _path_uuid(raw_id, "No user has this id.")
        if user_id == subject_id(principal):
            return user_id
        if not principal.is_admin:
            raise ForbiddenError("You may only list your own orders.")
        if not await self.users.exists(user_id, authorization=authorization):
            raise NotFoundError("No user has this id.")
        return user_id

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
        return await asyncio.shield(self._create_once(user_id, data, respond, idempotency_key))

    async def _create_once(
        self, user_id: UUID, data: OrderCreate, respond: Respond, idempotency_key: str
    ) -> Creation:
        claimed = await self.idempotency.claim(
            user_id=user_id,
            key=idempotency_key,
            fingerprint=fingerprint(data.model_dump(mode="json")),
        )
        if isinstance(claimed, StoredResponse):
            return Creation(claimed, replayed=True)
        try:
            response = await self._create(user_id, data, respond, claimed)
        except BaseException:
            # Shielded: a cancelled request must still free its key for the retry.
            await asyncio.shield(self.idempotency.release(claimed))
            raise
        return Creation(response, replayed=False)

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
            _require_match(if_match, order)
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
                if _erasable(order) or order.note is not None
            ]
            if not remaining:
                return Forgotten(deleted, anonymised)
            for order in remaining:
                # Lost to a concurrent change: the next round reads the order again.
                if _erasable(order):
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
            _require_match(if_match, order)
            if output_only.given:
                output_only.check(OrderPublic.of(order).wire())
            current = OrderValues.of(order)
            wanted = change(current)
            if wanted == current:
                return order  # nothing changes: no write, same version and ETag
            _check_rules(states.role_of(principal), current, wanted)
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

    async def _visible(self, principal: Principal, order_id: str) -> Order:
        """The order if the caller may see it: 404 when absent, 403 when someone else's."""
        order = await self.orders.get(_path_uuid(order_id, "No order has this id."))
        if order is None:
            raise NotFoundError("No order has this id.")
        if not principal.is_admin and order.user_id != subject_id(principal):
            raise ForbiddenError("This order belongs to someone else.")
        return order

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


def change_name(before: OrderStatus, after: OrderStatus, method: str) -> str:
    """The event name of a write: the new status if it changed (``confirmed``, ``shipped``,
    ``delivered``, ``cancelled``), else the method's own (``replaced``, ``patched``)."""
    return str(after) if after != before else method


def change_names() -> tuple[str, ...]:
    """Every name a write may record: creation, each method's, each status a transition
    leads to (``states.TRANSITIONS``), and deletion (the event types the catalog declares)."""
    reached = {after for _, after in states.TRANSITIONS}
    statuses = tuple(str(status) for status in OrderStatus if status in reached)
    return (CREATED, REPLACED, PATCHED, *statuses, DELETED)


def _check_rules(role: states.Role, current: OrderValues, wanted: OrderValues) -> None:
    edits = wanted.items != current.items or wanted.note != current.note
    if edits and not states.may_edit(role, current.status):
        raise InvalidStateError(f"Items and note cannot be changed on a {current.status} order.")
    if wanted.status != current.status and not states.may_transition(
        role, current.status, wanted.status
    ):
        raise InvalidStateError(
            f"Status cannot change from {current.status} to {wanted.status}"
            + (" by a customer." if role is states.Role.CUSTOMER else ".")
        )


def _require_match(if_match: IfMatch | None, order: Order) -> None:
    if if_match is not None and not if_match.allows(etag(order.id, order.version)):
        raise PreconditionFailedError()


def _stored(items: Sequence[OrderItemInput]) -> StoredItems:
    return stored_items([(item.book_id, item.quantity) for item in items])


def _too_busy() -> ConflictError:
    return ConflictError("The order is being changed by others right now; try again.")


def subject_id(principal: Principal) -> UUID:
    """The caller's user id: the token's subject, which users-service makes a UUID."""
    try:
        return UUID(principal.subject)
    except ValueError:
        raise UnauthenticatedError(
            "The token's subject is not a user id.", token_sent=True
        ) from None


def _path_uuid(raw: str, message: str) -> UUID:
    """A path id that is not a UUID names nothing (docs/api.md#representation): 404, never 400."""
    parsed = parse_id(raw)
    if parsed is None:
        raise NotFoundError(message)
    return parsed
