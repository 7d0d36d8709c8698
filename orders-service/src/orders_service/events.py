"""Events: the orders' event log on the shared outbox, and the users' events consumed.

``orders.order.<change>`` carries the order's public representation after the change (before
it, for ``deleted``); ``changes`` names the change. ``CATALOG`` declares every change the
service may record: the outbox refuses any other, and the AsyncAPI document is built from it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api_shared.events.catalog import EventCatalog, EventSpec
from api_shared.events.envelope import CloudEvent
from api_shared.events.history import History, events_after
from api_shared.events.outbox import Outbox
from api_shared.events.streams import ORDERS
from api_shared.ids import parse_id
from orders_service.changes import CREATED, DELETED, PATCHED, REPLACED, change_names
from orders_service.models import Order
from orders_service.schemas import OrderPublic
from orders_service.services import Forgotten

logger = logging.getLogger(__name__)

SOURCE = "/orders-service"

SUMMARIES = {
    CREATED: "An order was created (POST /orders); data: the order.",
    REPLACED: "An order's items and note were replaced (PUT); data: the order after it.",
    PATCHED: "An order's items or note changed by PATCH, its status did not, or its user was "
    "deleted and its note erased; data: the order after it.",
    DELETED: "An order was deleted (DELETE, or its user was deleted while it was pending or "
    "cancelled); data: the order as it was.",
}


def _summary(change: str) -> str:
    """A status change's summary unless the change has its own."""
    return SUMMARIES.get(
        change,
        f"An order's status became {change} (PATCH; items or note changed in the same request "
        "are in data); data: the order after it.",
    )


def event_type(change: str) -> str:
    """``created`` → ``orders.order.created``."""
    return f"orders.order.{change}"


CATALOG = EventCatalog(
    source=SOURCE,
    stream=ORDERS,
    events=[
        EventSpec(event_type(change), OrderPublic, _summary(change)) for change in change_names()
    ],
)


class OrderEvent(BaseModel):
    """An order's event as published (docs/api.md#events), an item of its history
    (``GET /orders/{id}/events``); the AsyncAPI document describes the same document."""

    model_config = ConfigDict(
        json_schema_extra={
            "additionalProperties": False,
            "description": "A CloudEvents 1.0 event of an order, exactly as published.",
        }
    )

    specversion: Literal["1.0"]
    id: str = Field(
        min_length=1, description="Unique per event: the key to de-duplicate on (webhook-id)."
    )
    source: Literal["/orders-service"]
    type: str = Field(json_schema_extra={"enum": list(CATALOG.types)})
    subject: UUID = Field(description="The order's id.")
    time: str = Field(json_schema_extra={"format": "date-time"})
    datacontenttype: Literal["application/json"]
    data: OrderPublic = Field(
        description="The order after the change (as it was, for orders.order.deleted)."
    )
    sequence: int = Field(ge=1, description="1, 2, 3… per order, with no gap.")


USER_DELETED_TYPE = "users.user.deleted"
USER_DELETED_SUBJECT = "users.events.user.deleted"
USERS_SOURCE = "/users-service"
USER_DELETIONS_CONSUMER = "orders-service-user-deletions"


class OutboxEventLog:
    """The ``EventLog`` of ``ports``: an order's events, written to the outbox in the open
    transaction (the unit of work of the change)."""

    def __init__(self, outbox: Outbox | None = None) -> None:
        self.outbox = outbox or Outbox(CATALOG)

    async def record(self, change: str, order: Order) -> None:
        await self.outbox.record(event_type(change), str(order.id), OrderPublic.of(order).wire())

    async def history(self, order_id: UUID, *, after: int, limit: int) -> History:
        # An order's events have its id as their subject (``record``).
        return await events_after(str(order_id), after=after, limit=limit)


def user_deleted_handler(
    forget_user: Callable[[UUID], Awaitable[Forgotten]],
) -> Callable[[CloudEvent], Awaitable[None]]:
    """Handles ``users.user.deleted``: that user's orders are deleted or anonymised
    (``OrderService.forget_user``), each change with its event."""

    async def handle(event: CloudEvent) -> None:
        if (event.type, event.source) != (USER_DELETED_TYPE, USERS_SOURCE):
            # Only users-service may publish on its subjects (the broker's permissions); a
            # message of another kind there (a consumer re-delivering onto it, say) is no
            # deletion, whatever subject carried it.
            logger.error(
                "not a users.user.deleted event: ignored",
                extra={"event": event.id, "type": event.type, "source": event.source},
            )
            return
        user_id = parse_id(event.subject)
        if user_id is None:
            logger.error("users.user.deleted names no user id", extra={"event": event.id})
            return
        forgotten = await forget_user(user_id)
        logger.info(
            "forgot a deleted user's orders",
            extra={
                "user_id": str(user_id),
                "deleted": forgotten.deleted,
                "anonymised": forgotten.anonymised,
            },
        )

    return handle
