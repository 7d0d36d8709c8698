"""A test event on demand (docs/api.md#webhooks): ``POST /api/webhooks/{id}/test-events``
queues a ``webhooks.endpoint.tested`` delivery for that endpoint alone. Over real HTTP on a
real database, with real tokens; test_dispatch.py sees the dispatcher send one, signed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from api_testkit.callers import Caller

BODY = {"url": "https://93.184.215.14/hooks/tested", "eventTypes": ["orders.order.created"]}


async def _endpoint(client: httpx.AsyncClient, admin: Caller) -> dict[str, Any]:
    response = await client.post("/api/webhooks", json=BODY, headers=admin.headers)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_a_test_event_is_queued_for_the_endpoint_and_listed(client, admin) -> None:
    endpoint = await _endpoint(client, admin)
    before = datetime.now(UTC).replace(microsecond=0)

    response = await client.post(
        f"/api/webhooks/{endpoint['id']}/test-events", headers=admin.headers
    )

    assert response.status_code == 202, response.text
    delivery = response.json()["data"]
    assert delivery["endpointId"] == endpoint["id"]
    assert (delivery["eventType"], delivery["subject"]) == (
        "webhooks.endpoint.tested",
        endpoint["id"],
    )
    assert (delivery["status"], delivery["attemptCount"], delivery["attempts"]) == (
        "pending",
        0,
        [],
    )
    event = delivery["event"]
    assert event == {
        "specversion": "1.0",
        "id": delivery["eventId"],
        "source": "/webhooks-service",
        "type": "webhooks.endpoint.tested",
        "subject": endpoint["id"],
        "time": event["time"],
        "datacontenttype": "application/json",
        "data": {"endpointId": endpoint["id"], "requestedBy": admin.id},
    }
    assert datetime.fromisoformat(event["time"]) >= before
    uuid.UUID(event["id"])
    listed = await client.get(f"/api/webhooks/{endpoint['id']}/deliveries", headers=admin.headers)
    assert [d["id"] for d in listed.json()["data"]] == [delivery["id"]]


async def test_each_test_event_is_a_new_event(client, admin) -> None:
    endpoint = await _endpoint(client, admin)
    path = f"/api/webhooks/{endpoint['id']}/test-events"

    first = await client.post(path, headers=admin.headers)
    second = await client.post(path, headers=admin.headers)

    assert first.status_code == second.status_code == 202
    assert first.json()["data"]["eventId"] != second.json()["data"]["eventId"]


async def test_a_disabled_endpoint_gets_no_test_event(client, admin) -> None:
    endpoint = await _endpoint(client, admin)
    path = f"/api/webhooks/{endpoint['id']}"
    disabled = await client.patch(path, json={"enabled": False}, headers=admin.headers)
    assert disabled.status_code == 200, disabled.text

    refused = await client.post(f"{path}/test-events", headers=admin.headers)

    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "INVALID_STATE"
    listed = await client.get(f"{path}/deliveries", headers=admin.headers)
    assert listed.json()["data"] == []


async def test_test_events_are_for_the_endpoints_manager_and_known_endpoints_only(
    client, admin, customer
) -> None:
    endpoint = await _endpoint(client, admin)

    as_customer = await client.post(
        f"/api/webhooks/{endpoint['id']}/test-events", headers=customer.headers
    )
    unknown = await client.post(f"/api/webhooks/{uuid.uuid4()}/test-events", headers=admin.headers)
    not_an_id = await client.post("/api/webhooks/nope/test-events", headers=admin.headers)
    anonymous = await client.post(f"/api/webhooks/{endpoint['id']}/test-events")

    assert as_customer.status_code == 404, as_customer.text  # not theirs: as if unknown
    assert (unknown.status_code, not_an_id.status_code) == (404, 404)
    assert anonymous.status_code == 401
    listed = await client.get(f"/api/webhooks/{endpoint['id']}/deliveries", headers=admin.headers)
    assert listed.json()["data"] == []
