"""The noun forms of secret rotation and replay (docs/api.md#webhooks), and the deprecated
verb paths they replace, which answer as before with Deprecation, Sunset and Link."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx
import orjson

from api_testkit.callers import Caller
from webhooks_service.models import Delivery, DeliveryStatus

BODY = {"url": "https://93.184.215.14/hooks/orders", "eventTypes": ["orders.order.*"]}
DEPRECATION = "@1795737600"  # 2026-11-27T00:00:00Z, the day the noun forms landed
SUNSET = "Thu, 27 May 2027 00:00:00 GMT"


async def _endpoint(client: httpx.AsyncClient, admin: Caller) -> dict[str, object]:
    response = await client.post("/api/webhooks", json=BODY, headers=admin.headers)
    assert response.status_code == 201, response.text
    data: dict[str, object] = response.json()["data"]
    return data


async def _failed_delivery(endpoint_id: object) -> str:
    now, event_id = datetime.now(UTC), str(uuid.uuid4())
    document = {"specversion": "1.0", "id": event_id, "type": "orders.order.created"}
    delivery = await Delivery.create(
        endpoint_id=endpoint_id,
        event_id=event_id,
        event_type="orders.order.created",
        subject="order-1",
        stream="ORDERS",
        stream_sequence=1,
        payload=orjson.dumps(document).decode(),
        status=DeliveryStatus.FAILED,
        created_at=now,
        updated_at=now,
    )
    return str(delivery.id)


def assert_deprecated(response: httpx.Response, successor: str) -> None:
    assert response.headers["deprecation"] == DEPRECATION
    assert response.headers["sunset"] == SUNSET
    assert response.headers["link"] == f'<{successor}>; rel="successor-version"'


async def test_a_new_secret_replaces_the_old_one_and_is_shown_once(client, admin) -> None:
    endpoint = await _endpoint(client, admin)

    response = await client.post(
        f"/api/webhooks/{endpoint['id']}/secrets", json={"graceSeconds": 0}, headers=admin.headers
    )

    assert response.status_code == 200, response.text
    assert "deprecation" not in response.headers
    data = response.json()["data"]
    assert data["id"] == endpoint["id"]
    assert data["secret"].startswith("whsec_")
    assert data["secret"] != endpoint["secret"]
    listed = await client.get(f"/api/webhooks/{endpoint['id']}", headers=admin.headers)
    assert "secret" not in listed.json()["data"]


async def test_the_deprecated_rotation_answers_as_before_and_names_its_successor(
    client, admin
) -> None:
    endpoint = await _endpoint(client, admin)
    path = f"/api/webhooks/{endpoint['id']}/rotate-secret"

    rotated = await client.post(path, headers=admin.headers)
    refused = await client.post(path, json={"graceSeconds": -1}, headers=admin.headers)
    unknown = await client.post(
        f"/api/webhooks/{uuid.uuid4()}/rotate-secret", headers=admin.headers
    )

    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["data"]["secret"] != endpoint["secret"]
    assert_deprecated(rotated, f"/api/webhooks/{endpoint['id']}/secrets")
    assert refused.status_code == 400
    assert "graceSeconds" in refused.json()["error"]["fields"]
    assert_deprecated(refused, f"/api/webhooks/{endpoint['id']}/secrets")
    assert unknown.status_code == 404


async def test_a_new_attempt_makes_a_failed_delivery_pending_again(client, admin) -> None:
    endpoint = await _endpoint(client, admin)
    delivery_id = await _failed_delivery(endpoint["id"])
    path = f"/api/webhooks/{endpoint['id']}/deliveries/{delivery_id}/attempts"

    response = await client.post(path, headers=admin.headers)
    again = await client.post(path, headers=admin.headers)

    assert response.status_code == 202, response.text
    assert "deprecation" not in response.headers
    assert response.json()["data"]["status"] == "pending"
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "INVALID_STATE"
    missing = f"/api/webhooks/{endpoint['id']}/deliveries/{uuid.uuid4()}/attempts"
    assert (await client.post(missing, headers=admin.headers)).status_code == 404


async def test_the_deprecated_replay_answers_as_before_and_names_its_successor(
    client, admin
) -> None:
    endpoint = await _endpoint(client, admin)
    delivery_id = await _failed_delivery(endpoint["id"])
    base = f"/api/webhooks/{endpoint['id']}/deliveries/{delivery_id}"

    replayed = await client.post(f"{base}/replay", headers=admin.headers)
    pending = await client.post(f"{base}/replay", headers=admin.headers)

    assert replayed.status_code == 202, replayed.text
    assert replayed.json()["data"]["status"] == "pending"
    assert pending.status_code == 409
    for response in (replayed, pending):
        assert_deprecated(response, f"{base}/attempts")


async def test_the_noun_routes_of_an_endpoint_not_theirs_are_not_found_for_a_customer(
    client, admin, customer
) -> None:
    created = await client.post(
        "/api/webhooks",
        json={"url": "https://93.184.215.14/hooks/admins", "eventTypes": ["*"]},
        headers=admin.headers,
    )
    assert created.status_code == 201, created.text
    delivery_id = uuid.uuid4()
    for endpoint_id in (created.json()["data"]["id"], uuid.uuid4()):
        for path in (
            f"/api/webhooks/{endpoint_id}/secrets",
            f"/api/webhooks/{endpoint_id}/deliveries/{delivery_id}/attempts",
        ):
            response = await client.post(path, headers=customer.headers)
            assert response.status_code == 404, path
            assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_the_openapi_document_marks_only_the_aliases_deprecated(client) -> None:
    paths = (await client.get("/docs/openapi.json")).json()["paths"]

    for path, deprecated in (
        ("/api/webhooks/{endpoint_id}/rotate-secret", True),
        ("/api/webhooks/{endpoint_id}/deliveries/{delivery_id}/replay", True),
        ("/api/webhooks/{endpoint_id}/secrets", False),
        ("/api/webhooks/{endpoint_id}/deliveries/{delivery_id}/attempts", False),
    ):
        assert paths[path]["post"].get("deprecated", False) is deprecated, path
