"""The webhooks API as admins use it, over real HTTP, on a real database, with real tokens."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest

from api_testkit.callers import Caller

PUBLIC_URL = "https://93.184.215.14/hooks/orders"  # a public address: no DNS needed
BODY = {"url": PUBLIC_URL, "eventTypes": ["orders.order.*"], "description": "warehouse"}


async def _create(client: httpx.AsyncClient, admin: Caller, **changes: object) -> httpx.Response:
    response = await client.post(
        "/api/webhooks",
        json={**BODY, **changes},
        headers=admin.headers,
    )
    assert response.status_code == 201, response.text
    return response


async def test_an_admin_registers_an_endpoint_and_sees_its_secret_once(client, admin) -> None:
    created = await _create(client, admin)
    data = created.json()["data"]
    assert data["url"] == PUBLIC_URL
    assert data["eventTypes"] == ["orders.order.*"]
    assert data["description"] == "warehouse"
    assert created.headers["Location"] == f"/api/webhooks/{data['id']}"
    assert data["secret"].startswith("whsec_")
    assert 24 <= len(base64.b64decode(data["secret"].removeprefix("whsec_"))) <= 32

    shown = await client.get(f"/api/webhooks/{data['id']}", headers=admin.headers)
    assert shown.status_code == 200
    assert "secret" not in shown.json()["data"]
    listed = await client.get("/api/webhooks", params={"limit": 100}, headers=admin.headers)
    assert all("secret" not in item for item in listed.json()["data"])


async def test_the_list_is_paged_per_the_shared_contract(client, admin) -> None:
    for _ in range(3):
        await _create(client, admin)
    page = await client.get(
        "/api/webhooks", params={"limit": 2, "sort": "-createdAt"}, headers=admin.headers
    )
    body = page.json()
    assert page.status_code == 200
    assert len(body["data"]) == 2
    assert body["page"]["limit"] == 2
    assert body["page"]["total"] >= 3
    bad = await client.get("/api/webhooks", params={"sort": "url"}, headers=admin.headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "BAD_SORT"


async def test_an_admin_changes_an_endpoints_types_and_description(client, admin) -> None:
    endpoint = (await _create(client, admin)).json()["data"]
    patched = await client.patch(
        f"/api/webhooks/{endpoint['id']}",
        json={"eventTypes": ["users.user.deleted", "users.user.deleted"], "description": "gdpr"},
        headers=admin.headers,
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["eventTypes"] == ["users.user.deleted"]
    assert patched.json()["data"]["description"] == "gdpr"
    assert patched.json()["data"]["url"] == PUBLIC_URL


async def test_rotating_the_secret_shows_a_new_one(client, admin) -> None:
    endpoint = (await _create(client, admin)).json()["data"]
    rotated = await client.post(
        f"/api/webhooks/{endpoint['id']}/rotate-secret", headers=admin.headers
    )
    assert rotated.status_code == 200
    assert rotated.json()["data"]["secret"].startswith("whsec_")
    assert rotated.json()["data"]["secret"] != endpoint["secret"]


async def test_a_deleted_endpoint_is_gone(client, admin) -> None:
    endpoint = (await _create(client, admin)).json()["data"]
    deleted = await client.delete(f"/api/webhooks/{endpoint['id']}", headers=admin.headers)
    assert deleted.status_code == 204
    again = await client.get(f"/api/webhooks/{endpoint['id']}", headers=admin.headers)
    assert again.status_code == 404
    assert again.json()["error"]["code"] == "NOT_FOUND"


async def test_a_new_endpoint_has_no_deliveries(client, admin) -> None:
    endpoint = (await _create(client, admin)).json()["data"]
    listed = await client.get(f"/api/webhooks/{endpoint['id']}/deliveries", headers=admin.headers)
    assert listed.status_code == 200
    assert listed.json() == {"data": [], "page": {"total": 0, "limit": 20, "offset": 0}}
    replay = await client.post(
        f"/api/webhooks/{endpoint['id']}/deliveries/{uuid.uuid4()}/replay", headers=admin.headers
    )
    assert replay.status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/webhooks"),
        ("POST", "/api/webhooks"),
        ("GET", f"/api/webhooks/{uuid.uuid4()}"),
        ("PATCH", f"/api/webhooks/{uuid.uuid4()}"),
        ("DELETE", f"/api/webhooks/{uuid.uuid4()}"),
        ("POST", f"/api/webhooks/{uuid.uuid4()}/rotate-secret"),
        ("GET", f"/api/webhooks/{uuid.uuid4()}/deliveries"),
        ("POST", f"/api/webhooks/{uuid.uuid4()}/deliveries/{uuid.uuid4()}/replay"),
    ],
)
async def test_every_route_needs_a_token(client, method, path) -> None:
    anonymous = await client.request(method, path)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize("raw_id", ["not-a-uuid", str(uuid.uuid4())])
async def test_an_unknown_or_malformed_id_is_not_found(client, admin, raw_id) -> None:
    for method, path in (
        ("GET", f"/api/webhooks/{raw_id}"),
        ("DELETE", f"/api/webhooks/{raw_id}"),
        ("POST", f"/api/webhooks/{raw_id}/rotate-secret"),
        ("GET", f"/api/webhooks/{raw_id}/deliveries"),
    ):
        response = await client.request(method, path, headers=admin.headers)
        assert response.status_code == 404, (method, path)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"eventTypes": ["orders.order.*"]}, "url"),
        ({"url": PUBLIC_URL}, "eventTypes"),
        ({"url": PUBLIC_URL, "eventTypes": []}, "eventTypes"),
        ({"url": PUBLIC_URL, "eventTypes": ["orders.order.shiped"]}, "eventTypes"),
        ({"url": PUBLIC_URL, "eventTypes": ["books.*"]}, "eventTypes"),
        ({"url": PUBLIC_URL, "eventTypes": "orders.*"}, "eventTypes"),
        ({"url": PUBLIC_URL, "eventTypes": ["*"], "secret": "whsec_x"}, "secret"),
        ({"url": "http://93.184.215.14/in", "eventTypes": ["*"]}, "url"),
        ({"url": "https://93.184.215.14/in", "eventTypes": ["*"], "description": 1}, "description"),
    ],
)
async def test_an_invalid_body_is_refused_naming_the_field(client, admin, body, field) -> None:
    response = await client.post("/api/webhooks", json=body, headers=admin.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert field in error["fields"]


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://10.0.0.5/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://100.64.1.1/hook",
        "https://localhost/hook",
        "https://127.1:8443/hook",
        "https://2130706433/hook",
        "https://[fec0::1]/hook",
    ],
)
async def test_an_endpoint_reaching_a_private_address_is_refused(client, admin, url) -> None:
    response = await client.post(
        "/api/webhooks", json={"url": url, "eventTypes": ["*"]}, headers=admin.headers
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "VALIDATION_FAILED"
    reason = response.json()["error"]["fields"]["url"]
    assert "public addresses only" in reason
    # Which internal address a name resolves to is the operator's to know (logged), not
    # the client's: "localhost is 127.0.0.1, a loopback address" would map the network.
    for detail in ("127.0.0.1", "::1", "loopback", "private", "link-local", "site-local"):
        assert detail not in reason


async def test_a_url_changed_to_a_private_address_is_refused_and_nothing_changes(
    client, admin
) -> None:
    endpoint = (await _create(client, admin)).json()["data"]
    response = await client.patch(
        f"/api/webhooks/{endpoint['id']}",
        json={"url": "https://192.168.0.10/hook"},
        headers=admin.headers,
    )
    assert response.status_code == 400
    assert "url" in response.json()["error"]["fields"]
    shown = await client.get(f"/api/webhooks/{endpoint['id']}", headers=admin.headers)
    assert shown.json()["data"]["url"] == PUBLIC_URL


async def test_the_openapi_document_describes_every_webhooks_operation(client) -> None:
    document = (await client.get("/docs/openapi.json")).json()
    operations = {
        operation["operationId"]
        for path in document["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    assert {
        "createWebhook",
        "listWebhooks",
        "getWebhook",
        "patchWebhook",
        "deleteWebhook",
        "rotateWebhookSecret",
        "listWebhookDeliveries",
        "replayWebhookDelivery",
    } <= operations
