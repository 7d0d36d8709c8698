"""The AsyncAPI documents of event catalogs: one channel, operation and message per type."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema_rs
import pytest

from api_shared.events.asyncapi import ENVELOPE, merge, service_document
from api_shared.events.catalog import EventCatalog, EventSpec, UndeclaredEventError
from api_shared.events.envelope import CloudEvent, envelope_schema
from api_shared.events.streams import ORDERS, USERS
from api_shared.representation import WireModel, format_timestamp
from api_testkit.asyncapi import message_schema


class Parcel(WireModel):
    parcel_id: str
    weight_grams: int
    sent_at: datetime


class Gone(WireModel):
    id: str


PARCELS = EventCatalog(
    source="/orders-service",
    stream=ORDERS,
    events=[
        EventSpec("orders.parcel.sent", Parcel, "A parcel left."),
        EventSpec("orders.parcel.lost", Gone, "A parcel was lost."),
    ],
)
VERSION = "2.4.0"  # a publishing service's
PEOPLE = EventCatalog(
    source="/users-service",
    stream=USERS,
    events=[EventSpec("users.person.left", Gone, "Someone left.")],
)


def _event(event_type: str, data: dict[str, Any], *, source: str = "/orders-service") -> Any:
    event = CloudEvent(source=source, type=event_type, subject="p-1", data=data, sequence=1)
    return event.to_dict()


def _parcel() -> dict[str, Any]:
    sent = Parcel(parcel_id="p-1", weight_grams=250, sent_at=datetime(2026, 1, 2, tzinfo=UTC))
    return {**sent.wire(), "sentAt": format_timestamp(sent.sent_at)}


def test_each_event_type_is_a_channel_on_its_nats_subject_received_from_nats() -> None:
    document = service_document("parcels", PARCELS, version=VERSION)

    assert document["asyncapi"] == "3.0.0"
    assert document["info"]["version"] == VERSION
    assert document["servers"]["nats"]["protocol"] == "nats"
    channel = document["channels"]["ordersParcelSent"]
    assert channel["address"] == "orders.events.parcel.sent"
    assert channel["servers"] == [{"$ref": "#/servers/nats"}]
    operation = document["operations"]["receiveOrdersParcelSent"]
    assert operation["action"] == "receive"
    assert operation["channel"] == {"$ref": "#/channels/ordersParcelSent"}
    assert operation["messages"] == [
        {"$ref": "#/channels/ordersParcelSent/messages/ordersParcelSent"}
    ]
    names = {m["name"] for m in document["components"]["messages"].values()}
    assert names == {"orders.parcel.sent", "orders.parcel.lost"}


def test_a_message_is_the_cloudevents_envelope_with_the_catalogs_model_as_data() -> None:
    document = service_document("parcels", PARCELS, version=VERSION)

    envelope, narrowed = document["components"]["messages"]["ordersParcelSent"]["payload"]["allOf"]
    assert envelope == {"$ref": f"#/components/schemas/{ENVELOPE}"}
    assert narrowed["properties"]["data"] == {"$ref": "#/components/schemas/Parcel"}
    assert narrowed["properties"]["type"]["const"] == "orders.parcel.sent"
    parcel = document["components"]["schemas"]["Parcel"]
    assert set(parcel["required"]) == {"parcelId", "weightGrams", "sentAt"}  # camelCase, all
    assert parcel["additionalProperties"] is False


def test_an_event_as_recorded_matches_its_message_and_another_types_data_does_not() -> None:
    document = service_document("parcels", PARCELS, version=VERSION)
    sent = jsonschema_rs.validator_for(message_schema(document, "orders.parcel.sent"))

    assert sent.is_valid(_event("orders.parcel.sent", _parcel()))
    assert not sent.is_valid(_event("orders.parcel.sent", {"id": "p-1"}))  # a lost one's data
    assert not sent.is_valid(_event("orders.parcel.lost", _parcel()))  # another type
    assert not sent.is_valid(_event("orders.parcel.sent", _parcel(), source="/users-service"))


def test_the_envelope_schema_takes_what_to_dict_writes_with_or_without_a_sequence() -> None:
    envelope = jsonschema_rs.validator_for(envelope_schema())
    event = CloudEvent(source="/orders-service", type="orders.parcel.sent", subject="p", data={})

    assert envelope.is_valid(event.to_dict())
    assert "sequence" not in event.to_dict()
    assert envelope.is_valid(_event("orders.parcel.sent", {}))
    assert not envelope.is_valid({**event.to_dict(), "extra": 1})
    assert not envelope.is_valid({**event.to_dict(), "specversion": "0.3"})


def test_merging_keeps_every_services_channels_and_each_schema_once() -> None:
    merged = merge(
        "platform",
        [
            service_document("a", PARCELS, version="1.2.0"),
            service_document("b", PEOPLE, version=VERSION),
        ],
        version="3.0.1",
    )

    assert merged["info"]["title"] == "platform"
    assert merged["info"]["version"] == "3.0.1"  # the merger's, not a part's
    assert set(merged["channels"]) == {"ordersParcelSent", "ordersParcelLost", "usersPersonLeft"}
    assert set(merged["operations"]) == {
        f"receive{key[:1].upper()}{key[1:]}" for key in merged["channels"]
    }
    assert {ENVELOPE, "Parcel", "Gone"} <= set(merged["components"]["schemas"])
    people = jsonschema_rs.validator_for(message_schema(merged, "users.person.left"))
    assert people.is_valid(_event("users.person.left", {"id": "x"}, source="/users-service"))


def test_a_catalog_refuses_a_type_twice_or_not_shaped_service_resource_change() -> None:
    twice = [EventSpec("orders.parcel.sent", Gone, "."), EventSpec("orders.parcel.sent", Gone, ".")]
    with pytest.raises(ValueError, match="declared twice"):
        EventCatalog(source="/s", stream=ORDERS, events=twice)
    with pytest.raises(ValueError, match="is not <service>"):
        EventCatalog(source="/s", stream=ORDERS, events=[EventSpec("parcel", Gone, ".")])


def test_a_catalog_names_what_it_declares_when_refusing_a_type() -> None:
    with pytest.raises(UndeclaredEventError, match=r"orders\.parcel\.sent, orders\.parcel\.lost"):
        PARCELS.check("orders.parcel.found")
    PARCELS.check("orders.parcel.sent")


def test_only_the_catalogs_models_become_schemas() -> None:
    schemas = service_document("parcels", PARCELS, version=VERSION)["components"]["schemas"]

    assert set(schemas) == {ENVELOPE, "Parcel", "Gone"}
