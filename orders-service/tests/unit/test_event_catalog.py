"""The catalog declares every event a write of an order can record, and nothing else."""

from __future__ import annotations

from itertools import product

from orders_service.changes import CREATED, DELETED, PATCHED, REPLACED, change_name
from orders_service.events import CATALOG, event_type
from orders_service.models import OrderStatus
from orders_service.states import TRANSITIONS


def test_every_name_a_write_can_record_is_a_declared_event_type_and_no_other_is() -> None:
    # A write keeps the status (any status, by PUT or PATCH) or makes an allowed transition.
    kept = {(status, status) for status in OrderStatus}
    writes = product(kept | set(TRANSITIONS), (REPLACED, PATCHED))
    names = {change_name(before, after, method) for (before, after), method in writes}

    assert {event_type(name) for name in names | {CREATED, DELETED}} == set(CATALOG.types)


def test_every_order_event_carries_the_orders_public_representation() -> None:
    assert {spec.data.__name__ for spec in CATALOG.events} == {"OrderPublic"}
    assert all(spec.nats_subject.startswith("orders.events.order.") for spec in CATALOG.events)
