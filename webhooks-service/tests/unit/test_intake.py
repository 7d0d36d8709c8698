"""What the dispatcher takes from a JetStream message: the event, its body byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from api_shared.events.envelope import MalformedEventError
from webhooks_service.delivery.intake import event_time, incoming_event


def test_an_event_keeps_its_body_exactly_and_its_place_in_the_stream() -> None:
    body = b'{"specversion":"1.0","id":"e-1","type":"orders.order.created","subject":"o-1"}'
    event = incoming_event("ORDERS", 42, body)
    assert (event.id, event.type, event.subject) == ("e-1", "orders.order.created", "o-1")
    assert (event.stream, event.stream_sequence) == ("ORDERS", 42)
    assert event.payload.encode() == body


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        orjson.dumps({"id": "e-1", "type": "orders.order.created"}),
        orjson.dumps({"id": "", "type": "orders.order.created", "subject": "o-1"}),
        orjson.dumps({"id": 7, "type": "orders.order.created", "subject": "o-1"}),
        orjson.dumps({"id": "x" * 256, "type": "orders.order.created", "subject": "o-1"}),
    ],
)
def test_a_message_that_is_not_an_event_is_refused(body: bytes) -> None:
    with pytest.raises(MalformedEventError):
        incoming_event("ORDERS", 1, body)


def test_an_events_time_is_read_as_an_aware_moment_or_not_at_all() -> None:
    body = orjson.dumps(
        {
            "id": "e-1",
            "type": "orders.order.created",
            "subject": "o-1",
            "time": "2026-01-02T03:04:05.6Z",
        }
    )
    assert incoming_event("ORDERS", 1, body).time == datetime(2026, 1, 2, 3, 4, 5, 600000, UTC)
    assert event_time("2026-01-02T04:04:05+01:00") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert event_time("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for value in ("yesterday", 1767322245, None):
        assert event_time(value) is None
