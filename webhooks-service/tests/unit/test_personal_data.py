"""Whose personal data an event carries, and the event without it."""

from __future__ import annotations

import orjson
import pytest

from webhooks_service.personal_data import concerned_user, redacted

USER = "8a1f0c6e-3c55-4a57-9f3e-6b0d2a1e9c11"


@pytest.mark.parametrize(
    ("event_type", "subject", "data", "user"),
    [
        ("users.user.created", USER, {"email": "ada@example.com"}, USER),
        ("users.user.updated", USER, {"role": "customer"}, USER),
        ("users.user.deleted", USER, {"id": USER}, None),  # receivers need it as it is
        ("orders.order.created", "order-1", {"userId": USER, "note": "leave at door"}, USER),
        ("orders.order.deleted", "order-1", {"userId": USER}, USER),
        ("orders.order.shipped", "order-1", {}, None),
        ("orders.order.shipped", "order-1", {"userId": 42}, None),
        ("orders.order.shipped", "order-1", None, None),
        ("books.book.added", "book-1", {"userId": USER}, None),
    ],
)
def test_the_user_an_event_concerns(event_type: str, subject: str, data: object, user) -> None:
    assert concerned_user(event_type, subject, {"data": data}) == user


def test_a_redacted_event_keeps_what_happened_to_which_resource_and_drops_the_data() -> None:
    event = {
        "specversion": "1.0",
        "id": "e-1",
        "source": "/orders-service",
        "type": "orders.order.created",
        "subject": "order-1",
        "sequence": 3,
        "time": "2026-01-02T03:04:05.600000Z",
        "datacontenttype": "application/json",
        "data": {"userId": USER, "note": "ring twice", "items": [{"bookId": "b-1"}]},
    }
    kept = orjson.loads(redacted(orjson.dumps(event).decode()))
    assert kept == {name: event[name] for name in kept}
    assert set(kept) == {"specversion", "id", "source", "type", "subject", "sequence", "time"}
    assert redacted(redacted(orjson.dumps(event).decode())) == redacted(
        orjson.dumps(event).decode()
    )


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", '"text"'])
def test_a_payload_that_is_not_an_event_is_redacted_to_nothing(payload: str) -> None:
    assert redacted(payload) == "{}"
