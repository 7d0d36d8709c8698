"""docs/api.md#events through the whole stack: the gateway's ``/asyncapi.json`` is the real
services' events, a third-party parser accepts it, and what they publish matches it."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema_rs
import pytest

from api_testkit.actors import admin, customer
from api_testkit.asyncapi import message_schema, parse_asyncapi
from api_testkit.events import eventually, read_stream
from api_testkit.orders import place
from api_testkit.stack import Stack
from orders_service.events import CATALOG as ORDER_EVENTS
from users_service.users.events import CATALOG as USER_EVENTS
from webhooks_service.endpoints.event_types import PUBLISHED_TYPES


async def served(gateway: httpx.AsyncClient) -> dict[str, Any]:
    response = await gateway.get("/asyncapi.json")
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


async def test_asyncapis_own_parser_accepts_the_gateways_document(
    gateway: httpx.AsyncClient,
) -> None:
    report = await parse_asyncapi(await served(gateway))

    assert report.parsed, report.diagnostics
    assert report.errors == [], report.diagnostics


async def test_it_describes_every_type_the_services_publish_and_webhooks_offer(
    gateway: httpx.AsyncClient,
) -> None:
    document = await served(gateway)

    messages = {message["name"] for message in document["components"]["messages"].values()}
    assert messages == {*ORDER_EVENTS.types, *USER_EVENTS.types}
    # webhooks' eventTypes select exactly these, and the dispatcher's own (docs/api.md#webhooks)
    assert messages == set(PUBLISHED_TYPES)


@pytest.mark.processes  # reads the stack's nats-server
async def test_what_the_services_publish_matches_its_channel_and_message(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    user, headers = await customer(gateway)
    order = await place(gateway, headers)
    assert order.status_code == 201, order.text
    order_id = order.json()["data"]["id"]
    confirmed = await gateway.patch(
        f"/orders/{order_id}", json={"status": "confirmed"}, headers=await admin(gateway, stack)
    )
    assert confirmed.status_code == 200, confirmed.text
    document = await served(gateway)
    addresses = {channel["address"] for channel in document["channels"].values()}

    async def published() -> list[Any]:
        subjects = {user["id"], order_id}
        stored = [
            *await read_stream(stack.nats_login(), "USERS"),
            *await read_stream(stack.nats_login(), "ORDERS"),
        ]
        return [m for m in stored if m.event.subject in subjects]

    async def all_three() -> bool:
        return len(await published()) == 3

    await eventually(all_three, "the sign-up's and the order's events on the streams")
    for message in await published():
        event = message.event.to_dict()
        assert message.subject in addresses
        validator = jsonschema_rs.validator_for(message_schema(document, message.event.type))
        assert validator.is_valid(event), (event, list(validator.iter_errors(event)))
