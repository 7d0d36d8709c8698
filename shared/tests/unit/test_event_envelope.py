"""The CloudEvents envelope: its attributes, its JSON, and the NATS subject of each type."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from api_shared.events.envelope import CloudEvent, MalformedEventError, nats_subject


def make_event(**overrides: Any) -> CloudEvent:
    values: dict[str, Any] = {
        "source": "/orders-service",
        "type": "orders.order.created",
        "subject": "0b4e7a4e-8d4c-4f8e-9a51-1f2b3c4d5e6f",
        "data": {"id": "0b4e7a4e-8d4c-4f8e-9a51-1f2b3c4d5e6f", "status": "pending"},
        "time": datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=UTC),
        "sequence": 3,
    }
    return CloudEvent(**{**values, **overrides})


def test_an_event_is_a_cloudevents_1_0_document_with_a_sequence_extension() -> None:
    document = orjson.loads(make_event(id="e-1").to_json())

    assert document == {
        "specversion": "1.0",
        "id": "e-1",
        "source": "/orders-service",
        "type": "orders.order.created",
        "subject": "0b4e7a4e-8d4c-4f8e-9a51-1f2b3c4d5e6f",
        "time": "2026-01-02T03:04:05.600000Z",
        "datacontenttype": "application/json",
        "data": {"id": "0b4e7a4e-8d4c-4f8e-9a51-1f2b3c4d5e6f", "status": "pending"},
        "sequence": 3,
    }


def test_every_new_event_gets_its_own_id() -> None:
    assert make_event().id != make_event().id


def test_an_event_read_back_from_its_json_is_the_same_event() -> None:
    event = make_event()

    assert CloudEvent.from_json(event.to_json()) == event


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'{"specversion": "0.3", "id": "x"}',
        b'{"specversion": "1.0", "id": "x", "source": "/s", "type": "t", "subject": "s"}',
        b'{"specversion": "1.0", "id": "", "source": "/s", "type": "t", "subject": "s",'
        b' "time": "2026-01-01T00:00:00Z", "data": {}}',
    ],
)
def test_a_message_that_is_not_one_of_our_events_is_refused(raw: bytes) -> None:
    with pytest.raises(MalformedEventError):
        CloudEvent.from_json(raw)


def test_the_nats_subject_puts_events_under_the_service_name() -> None:
    assert nats_subject("orders.order.created") == "orders.events.order.created"
    assert nats_subject("users.user.deleted") == "users.events.user.deleted"


@pytest.mark.parametrize("bad_type", ["orders", "", ".order.created"])
def test_a_type_without_service_and_change_has_no_subject(bad_type: str) -> None:
    with pytest.raises(ValueError, match="is not <service>"):
        nats_subject(bad_type)


@pytest.mark.parametrize("sequence", [None, 3])
def test_the_document_before_its_sequence_completes_to_the_numbered_document(
    sequence: int | None,
) -> None:
    event = CloudEvent(
        source="/orders-service",
        type="orders.order.created",
        subject="order-1",
        data={"id": "order-1", "items": [{"bookId": "b", "quantity": 2}], "note": None},
        sequence=sequence,
    )
    for number in (1, 42, 10**12):
        completed = event.to_json_before_sequence() + str(number).encode() + b"}"
        assert completed == replace(event, sequence=number).to_json()
