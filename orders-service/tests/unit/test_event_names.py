"""Which event a write of an order records."""

from __future__ import annotations

import pytest

from orders_service.changes import PATCHED, REPLACED, change_name
from orders_service.models import OrderStatus


@pytest.mark.parametrize(
    ("before", "after", "method", "expected"),
    [
        (OrderStatus.PENDING, OrderStatus.CONFIRMED, PATCHED, "confirmed"),
        (OrderStatus.CONFIRMED, OrderStatus.SHIPPED, PATCHED, "shipped"),
        (OrderStatus.SHIPPED, OrderStatus.DELIVERED, PATCHED, "delivered"),
        (OrderStatus.PENDING, OrderStatus.CANCELLED, PATCHED, "cancelled"),
        (OrderStatus.PENDING, OrderStatus.PENDING, PATCHED, "patched"),
        (OrderStatus.CONFIRMED, OrderStatus.CONFIRMED, REPLACED, "replaced"),
    ],
)
def test_a_status_change_is_named_by_the_new_status_any_other_write_by_its_method(
    before: OrderStatus, after: OrderStatus, method: str, expected: str
) -> None:
    assert change_name(before, after, method) == expected
