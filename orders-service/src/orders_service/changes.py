"""The changes an order goes through, by the names its events bear (``orders.order.<name>``):
its creation, each method's change, each status a transition leads to, its deletion."""

from __future__ import annotations

from orders_service import states
from orders_service.models import OrderStatus

# What an order's events are named (orders.order.<name>): a status change by the new status.
CREATED, REPLACED, PATCHED, DELETED = "created", "replaced", "patched", "deleted"


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
