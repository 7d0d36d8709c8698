"""Order bodies: strict types, every bad field named, read-only fields refused by name on
create, derived from the schemas."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from api_shared.errors import ValidationFailedError
from orders_service.models import Order, OrderStatus
from orders_service.schemas import (
    CREATE_READ_ONLY,
    PATCH_OUTPUT_ONLY,
    REPLACE_OUTPUT_ONLY,
    STATUS_ON_PUT,
    OrderCreate,
    OrderPatch,
    OrderPublic,
    parse_order_input,
)

ITEM = {"bookId": "book-1", "quantity": 1}


def _fields(model: type[Any], body: dict[str, Any], read_only: Any = CREATE_READ_ONLY) -> Any:
    with pytest.raises(ValidationFailedError) as caught:
        parse_order_input(model, body, read_only)
    return caught.value.fields


def test_a_valid_create_body_parses_with_note_defaulting_to_null() -> None:
    parsed = parse_order_input(OrderCreate, {"items": [ITEM]}, CREATE_READ_ONLY)

    assert parsed.items[0].book_id == "book-1"
    assert parsed.items[0].quantity == 1
    assert parsed.note is None


@pytest.mark.parametrize(
    ("quantity", "reason"),
    [
        ("2", "must be an integer"),
        (2.0, "must be an integer"),
        (True, "must be an integer"),
        (None, "must be an integer"),
        (0, "must be between 1 and 100"),
        (101, "must be between 1 and 100"),
    ],
)
def test_quantity_is_an_integer_from_1_to_100_with_no_coercion(quantity: Any, reason: str) -> None:
    body = {"items": [{"bookId": "book-1", "quantity": quantity}]}

    assert _fields(OrderCreate, body) == {"items.0.quantity": reason}


@pytest.mark.parametrize("book_id", ["", "   ", "b" * 101])
def test_book_ids_are_1_to_100_characters(book_id: str) -> None:
    body = {"items": [{"bookId": book_id, "quantity": 1}]}

    assert _fields(OrderCreate, body) == {"items.0.bookId": "must be 1 to 100 characters"}


def test_a_note_may_be_500_characters_but_not_501_nor_a_number() -> None:
    assert parse_order_input(OrderCreate, {"items": [ITEM], "note": "n" * 500}, {}).note
    assert _fields(OrderCreate, {"items": [ITEM], "note": "n" * 501}) == {
        "note": "must be at most 500 characters"
    }
    assert _fields(OrderCreate, {"items": [ITEM], "note": 5}) == {"note": "must be a string"}


def test_snake_case_keys_are_unknown_fields() -> None:
    body = {"items": [{"book_id": "book-1", "quantity": 1}]}

    assert _fields(OrderCreate, body) == {
        "items.0.bookId": "is required",
        "items.0.book_id": "is not allowed",
    }


def test_read_only_and_invalid_fields_are_reported_together() -> None:
    body = {"id": "x", "createdAt": "y", "items": "none"}

    assert _fields(OrderCreate, body) == {
        "id": "is read-only",
        "createdAt": "is read-only",
        "items": "must be an array",
    }


def test_the_read_only_fields_of_each_body_are_the_public_ones_it_lacks() -> None:
    server_set = ["id", "userId", "createdAt", "updatedAt"]

    assert list(CREATE_READ_ONLY) == ["id", "userId", "status", "createdAt", "updatedAt"]
    assert list(REPLACE_OUTPUT_ONLY) == ["id", "userId", "status", "createdAt", "updatedAt"]
    assert REPLACE_OUTPUT_ONLY["status"] == STATUS_ON_PUT
    assert list(PATCH_OUTPUT_ONLY) == server_set  # a patch may change the status


def test_a_patch_tells_absent_from_null() -> None:
    absent = parse_order_input(OrderPatch, {}, {})
    cleared = parse_order_input(OrderPatch, {"note": None}, {})

    assert not absent.has("note")
    assert cleared.has("note")
    assert cleared.note is None


def test_a_patch_takes_a_status_by_its_name_only() -> None:
    parsed = parse_order_input(OrderPatch, {"status": "shipped"}, {})

    assert parsed.status is OrderStatus.SHIPPED
    for status in ("SHIPPED", 1, ["shipped"]):
        assert _fields(OrderPatch, {"status": status}, {}) == {
            "status": "must be one of: pending, confirmed, shipped, delivered, cancelled"
        }


def test_the_public_shape_is_camel_case_with_second_precision_utc_times() -> None:
    moment = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    order = Order(
        id=uuid.uuid4(),
        user_id=uuid.uuid4(),
        status=OrderStatus.PENDING,
        items=[{"book_id": "b", "quantity": 2}],
        note=None,
        version=1,
        created_at=moment,
        updated_at=moment,
    )

    assert OrderPublic.of(order).wire() == {
        "id": str(order.id),
        "userId": str(order.user_id),
        "status": "pending",
        "items": [{"bookId": "b", "quantity": 2}],
        "note": None,
        "createdAt": "2024-05-06T07:08:09Z",
        "updatedAt": "2024-05-06T07:08:09Z",
    }
