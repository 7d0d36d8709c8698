"""Customers manage their own endpoints, which receive only their own events (audience
``owner``); admins manage every endpoint. Over real HTTP on a real database, with real tokens
of a real users-service.

Which events reach which endpoint is tested with real NATS and processes in
test_dispatch_audience.py.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from api_testkit.actors import customer_caller
from api_testkit.callers import Caller
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.models import Audience

URL = "https://93.184.215.14/hooks/mine"
BODY = {"url": URL, "eventTypes": ["orders.*"]}


async def _create(client: httpx.AsyncClient, caller: Caller, **changes: object) -> dict[str, Any]:
    response = await client.post("/api/webhooks", json={**BODY, **changes}, headers=caller.headers)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def _listed(client: httpx.AsyncClient, caller: Caller) -> set[str]:
    response = await client.get("/api/webhooks", params={"limit": 100}, headers=caller.headers)
    assert response.status_code == 200, response.text
    total = response.json()["page"]["total"]
    ids = {item["id"] for item in response.json()["data"]}
    assert total == len(ids) or total > 100
    return ids


@pytest.fixture
async def other_customer(users_api: httpx.AsyncClient) -> Caller:
    return await customer_caller(users_api)


async def test_a_customers_endpoint_is_theirs_and_receives_their_events_only(
    client, customer
) -> None:
    endpoint = await _create(client, customer)
    assert (endpoint["ownerId"], endpoint["createdBy"]) == (customer.id, customer.id)
    assert endpoint["audience"] == "owner"
    assert endpoint["secret"].startswith("whsec_")
    assert list(endpoint)[-2:] == ["audience", "secret"]  # the new field goes last
    asked = await _create(client, customer, audience="owner")
    assert asked["audience"] == "owner"


async def test_an_admins_endpoint_receives_every_event_unless_the_admin_says_otherwise(
    client, admin
) -> None:
    assert (await _create(client, admin))["audience"] == "all"
    assert (await _create(client, admin, audience="all"))["audience"] == "all"
    assert (await _create(client, admin, audience="owner"))["audience"] == "owner"
    shown = await client.get(
        "/api/webhooks", params={"limit": 1, "sort": "-createdAt"}, headers=admin.headers
    )
    assert shown.json()["data"][0]["audience"] == "owner"


@pytest.mark.parametrize(
    "body",
    [
        {**BODY, "audience": "all"},
        # Nothing else about the body is looked at: not its URL (never resolved), nor its types.
        {"url": "https://127.0.0.1/hook", "eventTypes": ["*"], "audience": "all"},
        {"url": URL, "eventTypes": ["books.*"], "audience": "all"},
    ],
)
async def test_a_customer_asking_for_every_users_events_is_refused(client, customer, body) -> None:
    refused = await client.post("/api/webhooks", json=body, headers=customer.headers)
    assert refused.status_code == 403, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["message"]) == (
        "FORBIDDEN",
        "Only admins receive every user's events.",
    )
    assert await _listed(client, customer) == set()


@pytest.mark.parametrize("audience", [None, "everyone", 1])
async def test_an_audience_that_is_not_one_is_refused_naming_it(client, admin, audience) -> None:
    refused = await client.post(
        "/api/webhooks", json={**BODY, "audience": audience}, headers=admin.headers
    )
    assert refused.status_code == 400, refused.text
    assert "audience" in refused.json()["error"]["fields"]


async def test_the_list_shows_a_customer_their_own_and_an_admin_everyones(
    client, admin, customer, other_customer
) -> None:
    mine = {(await _create(client, customer))["id"] for _ in range(2)}
    theirs = (await _create(client, other_customer))["id"]
    admins = (await _create(client, admin))["id"]

    assert await _listed(client, customer) == mine
    assert await _listed(client, other_customer) == {theirs}
    assert mine | {theirs, admins} <= await _listed(client, admin)


def _routes(endpoint_id: str, delivery_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    base = f"/api/webhooks/{endpoint_id}"
    attempt = f"{base}/deliveries/{delivery_id}"
    return [
        ("GET", base, None),
        ("PATCH", base, {"description": "mine now"}),
        ("PATCH", base, {"enabled": False}),
        ("PATCH", base, {"url": "not a url at all", "bogus": 1}),  # its body is never read
        ("DELETE", base, None),
        ("POST", f"{base}/secrets", {"graceSeconds": 0}),
        ("POST", f"{base}/secrets", {"graceSeconds": "nope"}),
        ("POST", f"{base}/rotate-secret", None),
        ("POST", f"{base}/test-events", None),
        ("GET", f"{base}/deliveries", None),
        ("GET", f"{base}/deliveries?sort=url", None),  # its query is never read
        ("POST", f"{attempt}/attempts", None),
        ("POST", f"{attempt}/replay", None),
    ]


async def test_another_customers_endpoint_is_not_found_and_stays_as_it_was(
    client, customer, other_customer
) -> None:
    theirs = await _create(client, other_customer)
    test_event = await client.post(
        f"/api/webhooks/{theirs['id']}/test-events", headers=other_customer.headers
    )
    assert test_event.status_code == 202, test_event.text
    delivery_id = test_event.json()["data"]["id"]

    for method, path, body in _routes(theirs["id"], delivery_id):
        refused = await client.request(method, path, json=body, headers=customer.headers)
        assert refused.status_code == 404, (method, path, refused.text)
        assert refused.json()["error"] == {
            "code": "NOT_FOUND",
            "message": "No webhook endpoint has this id.",
        }

    shown = await client.get(f"/api/webhooks/{theirs['id']}", headers=other_customer.headers)
    assert shown.status_code == 200
    kept = shown.json()["data"]
    assert {k: v for k, v in kept.items() if k != "secret"} == {
        k: v for k, v in theirs.items() if k != "secret"
    }
    listed = await client.get(
        f"/api/webhooks/{theirs['id']}/deliveries", headers=other_customer.headers
    )
    assert [d["id"] for d in listed.json()["data"]] == [delivery_id]  # no test event added


async def test_an_admins_endpoint_is_not_found_for_a_customer(client, admin, customer) -> None:
    admins = await _create(client, admin)
    for method, path, body in _routes(admins["id"], str(uuid.uuid4())):
        refused = await client.request(method, path, json=body, headers=customer.headers)
        assert refused.status_code == 404, (method, path, refused.text)


async def test_an_all_endpoint_is_not_found_for_its_owner_once_a_customer(client, customer) -> None:
    # An admin's endpoint, the admin since demoted: it carries every user's data.
    kept = await EndpointRepository().create(
        url=URL,
        event_types=["*"],
        description="",
        secret="whsec_AAAA",
        now=datetime.now(UTC),
        created_by=customer.id,
        audience=Audience.ALL,
    )
    shown = await client.get(f"/api/webhooks/{kept.id}", headers=customer.headers)
    assert shown.status_code == 404
    assert str(kept.id) not in await _listed(client, customer)


async def test_a_customer_manages_their_own_endpoint(client, customer) -> None:
    endpoint = await _create(client, customer)
    path = f"/api/webhooks/{endpoint['id']}"

    changed = await client.patch(path, json={"description": "shop"}, headers=customer.headers)
    rotated = await client.post(f"{path}/secrets", headers=customer.headers)
    tested = await client.post(f"{path}/test-events", headers=customer.headers)
    listed = await client.get(f"{path}/deliveries", headers=customer.headers)
    replayed = await client.post(
        f"{path}/deliveries/{tested.json()['data']['id']}/attempts", headers=customer.headers
    )

    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["description"] == "shop"
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["data"]["secret"] != endpoint["secret"]
    assert tested.status_code == 202, tested.text
    assert tested.json()["data"]["event"]["data"]["requestedBy"] == customer.id
    assert [d["id"] for d in listed.json()["data"]] == [tested.json()["data"]["id"]]
    assert replayed.status_code == 409  # still pending: its own schedule
    deleted = await client.delete(path, headers=customer.headers)
    assert deleted.status_code == 204
    assert (await client.get(path, headers=customer.headers)).status_code == 404


async def test_an_owner_endpoint_keeps_its_owner_whoever_enables_it(
    client, admin, customer
) -> None:
    endpoint = await _create(client, customer)
    path = f"/api/webhooks/{endpoint['id']}"

    for enabler in (customer, admin):
        disabled = await client.patch(path, json={"enabled": False}, headers=customer.headers)
        assert disabled.json()["data"]["enabled"] is False
        enabled = await client.patch(path, json={"enabled": True}, headers=enabler.headers)
        assert enabled.status_code == 200, enabled.text
        data = enabled.json()["data"]
        assert (data["enabled"], data["disabledReason"]) == (True, None)
        assert data["ownerId"] == customer.id

    # An admin's all endpoint still becomes the enabling admin's (test_ownership.py).
    admins = await _create(client, admin)
    adopted = await client.patch(
        f"/api/webhooks/{admins['id']}", json={"enabled": True}, headers=admin.headers
    )
    assert adopted.json()["data"]["ownerId"] == admin.id


async def test_an_admin_sees_and_manages_a_customers_endpoint(client, admin, customer) -> None:
    endpoint = await _create(client, customer)
    path = f"/api/webhooks/{endpoint['id']}"
    shown = await client.get(path, headers=admin.headers)
    assert shown.status_code == 200
    assert shown.json()["data"]["ownerId"] == customer.id
    disabled = await client.patch(path, json={"enabled": False}, headers=admin.headers)
    assert disabled.json()["data"]["disabledReason"] == "by-admin"
    assert (await client.delete(path, headers=admin.headers)).status_code == 204
