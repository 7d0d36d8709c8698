"""The Idempotency-Key header and the request fingerprint."""

from __future__ import annotations

import pytest

from api_shared.errors import ValidationFailedError
from orders_service.idempotency import fingerprint, parse_key


def test_a_missing_header_means_no_key_and_surrounding_spaces_are_dropped() -> None:
    assert parse_key(None) is None
    assert parse_key("  order-42 ") == "order-42"


@pytest.mark.parametrize("raw", ["", "   ", "k" * 256, "caf\u00e9", "tab\there"])
def test_an_empty_long_or_unprintable_key_is_refused_naming_the_header(raw: str) -> None:
    with pytest.raises(ValidationFailedError) as caught:
        parse_key(raw)

    assert caught.value.fields == {"Idempotency-Key": "must be 1 to 255 printable ASCII characters"}


def test_the_fingerprint_ignores_key_order_but_not_values() -> None:
    one = fingerprint({"items": [{"book_id": "a", "quantity": 1}], "note": None})
    same = fingerprint({"note": None, "items": [{"quantity": 1, "book_id": "a"}]})
    other = fingerprint({"items": [{"book_id": "a", "quantity": 2}], "note": None})

    assert one == same
    assert one != other
    assert len(one) == 64
