"""Reading orders, independent of HTTP: who may see which order, what a list may be sorted and
filtered by, and an order's event history.

``OrderReader`` answers the reads; ``services.OrderService`` is an ``OrderReader`` that also
writes, reading each order it changes as its caller may see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from api_shared.auth.principal import Principal
from api_shared.errors import ForbiddenError, NotFoundError, UnauthenticatedError
from api_shared.events.history import History
from api_shared.ids import parse_id
from api_shared.paging import FilterParser, PageRequest, choice
from orders_service.models import Order, OrderStatus
from orders_service.ports import EventLog, OrderQuery, OrderStore, UserDirectory

SORTS = ("createdAt", "updatedAt")
DEFAULT_SORT = "createdAt"
_SORT_COLUMNS = {"createdAt": "created_at", "updatedAt": "updated_at"}


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


class OrderReader:
    """The reads of the orders resource: one order, a page of orders, an order's events."""

    def __init__(self, orders: OrderStore, events: EventLog, users: UserDirectory) -> None:
        self.orders = orders
        self.events = events
        self.users = users

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
            sort=page.sort.column(_SORT_COLUMNS),
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
        user_id = path_uuid(raw_id, "No user has this id.")
        if user_id == subject_id(principal):
            return user_id
        if not principal.is_admin:
            raise ForbiddenError("You may only list your own orders.")
        if not await self.users.exists(user_id, authorization=authorization):
            raise NotFoundError("No user has this id.")
        return user_id

    async def _visible(self, principal: Principal, order_id: str) -> Order:
        """The order if the caller may see it: 404 when absent, 403 when someone else's."""
        order = await self.orders.get(path_uuid(order_id, "No order has this id."))
        if order is None:
            raise NotFoundError("No order has this id.")
        if not principal.is_admin and order.user_id != subject_id(principal):
            raise ForbiddenError("This order belongs to someone else.")
        return order


def subject_id(principal: Principal) -> UUID:
    """The caller's user id: the token's subject, which users-service makes a UUID."""
    try:
        return UUID(principal.subject)
    except ValueError:
        raise UnauthenticatedError(
            "The token's subject is not a user id.", token_sent=True
        ) from None


def path_uuid(raw: str, message: str) -> UUID:
    """A path id that is not a UUID names nothing (docs/api.md#representation): 404, never 400."""
    parsed = parse_id(raw)
    if parsed is None:
        raise NotFoundError(message)
    return parsed
