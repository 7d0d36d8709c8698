"""Endpoints record who created them and answer to an owner, an admin; admins disable and
enable them. Over real HTTP on a real database, with real tokens.

What happens when the owner loses admin (users-service's events) is tested with real NATS
and processes in test_dispatch_ownership.py.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx

from api_testkit.actors import another_admin
from api_testkit.callers import Caller
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Delivery, DeliveryStatus, DisabledReason, Endpoint

BODY = {"url": "https://93.184.215.14/hooks/owned", "eventTypes": ["orders.*"]}
LEASE = timedelta(seconds=60)


async def _create(client: httpx.AsyncClient, admin: Caller) -> dict[str, Any]:
    created = await client.post("/api/webhooks", json=BODY, headers=admin.headers)
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    return data


async def _patch(client: httpx.AsyncClient, admin: Caller, endpoint_id: str, body: dict[str, Any]):
    return await client.patch(f"/api/webhooks/{endpoint_id}", json=body, headers=admin.headers)


async def test_a_new_endpoint_is_enabled_and_owned_by_the_admin_who_created_it(
    client, admin
) -> None:
    endpoint = await _create(client, admin)
    assert endpoint["createdBy"] == endpoint["ownerId"] == admin.id
    assert endpoint["enabled"] is True
    assert endpoint["disabledReason"] is None
    assert endpoint["disabledAt"] is None
    listed = await client.get("/api/webhooks", params={"limit": 100}, headers=admin.headers)
    (mine,) = [e for e in listed.json()["data"] if e["id"] == endpoint["id"]]
    assert mine["ownerId"] == admin.id


async def test_an_admin_disables_an_endpoint_and_another_enabling_it_becomes_its_owner(
    client, admin, users_api
) -> None:
    endpoint = await _create(client, admin)
    disabled = await _patch(client, admin, endpoint["id"], {"enabled": False})
    assert disabled.status_code == 200, disabled.text
    data = disabled.json()["data"]
    assert (data["enabled"], data["disabledReason"]) == (False, "by-admin")
    assert data["disabledAt"] is not None
    assert data["ownerId"] == admin.id

    again = await _patch(client, admin, endpoint["id"], {"enabled": False})
    assert again.json()["data"]["disabledAt"] == data["disabledAt"]  # restated: no change

    other = await another_admin(users_api, admin)
    enabled = await _patch(client, other, endpoint["id"], {"enabled": True})
    assert enabled.status_code == 200, enabled.text
    data = enabled.json()["data"]
    assert (data["enabled"], data["disabledReason"], data["disabledAt"]) == (True, None, None)
    assert data["ownerId"] == other.id
    assert data["createdBy"] == admin.id  # who created it does not change


async def test_enabled_null_or_not_a_boolean_is_refused_and_changes_nothing(client, admin) -> None:
    endpoint = await _create(client, admin)
    for value in (None, "true", 1):
        refused = await _patch(client, admin, endpoint["id"], {"enabled": value})
        assert refused.status_code == 400, refused.text
        assert "enabled" in refused.json()["error"]["fields"]
    shown = await client.get(f"/api/webhooks/{endpoint['id']}", headers=admin.headers)
    assert shown.json()["data"]["enabled"] is True


async def test_disabling_an_owners_endpoints_leaves_everyone_elses_and_happens_once(
    base_url,
) -> None:
    endpoints, now = EndpointRepository(), datetime.now(UTC)
    owner, other = str(uuid.uuid4()), str(uuid.uuid4())

    async def make(created_by: str | None) -> Endpoint:
        return await endpoints.create(
            url="https://93.184.215.14/in",
            event_types=["*"],
            description="",
            secret="whsec_AAAA",
            now=now,
            created_by=created_by,
        )

    theirs = [await make(owner), await make(owner)]
    kept = [await make(other), await make(None)]  # another admin's, and one from before owners
    reason = DisabledReason.OWNER_NOT_ADMIN
    assert await endpoints.disable_owned(owner, reason, now) == 2
    assert await endpoints.disable_owned(owner, reason, now + LEASE) == 0  # redelivered event
    for endpoint in theirs:
        await endpoint.refresh_from_db()
        assert (endpoint.enabled, endpoint.disabled_reason) == (False, reason)
        assert endpoint.disabled_at == now
    for endpoint in kept:
        await endpoint.refresh_from_db()
        assert endpoint.enabled is True
    enabled_ids = {e.id for e in await endpoints.enabled()}
    assert not enabled_ids & {e.id for e in theirs}
    assert {e.id for e in kept} <= enabled_ids


async def test_a_disabled_endpoints_due_deliveries_are_not_claimed_until_it_is_enabled(
    base_url,
) -> None:
    endpoints, deliveries, now = EndpointRepository(), DeliveryRepository(), datetime.now(UTC)
    owner = str(uuid.uuid4())
    endpoint = await endpoints.create(
        url="https://93.184.215.14/in",
        event_types=["*"],
        description="",
        secret="whsec_AAAA",
        now=now,
        created_by=owner,
    )
    event_id = str(uuid.uuid4())
    event = IncomingEvent(event_id, "orders.order.created", event_id, "ORDERS", 1, "{}")
    await deliveries.add(event, [endpoint], now)
    await endpoints.disable_owned(owner, DisabledReason.OWNER_DELETED, now)

    def ours(claims: list[tuple[Delivery, Endpoint, UUID]]) -> list[str]:
        return [d.event_id for d, _, _ in claims if d.endpoint_id == endpoint.id]

    assert ours(await deliveries.claim_due(now=now, lease=LEASE, limit=100)) == []
    (waiting,) = await endpoint.deliveries.all()
    assert waiting.status is DeliveryStatus.PENDING

    await endpoints.update(endpoint, {"enabled": True, "owner_id": str(uuid.uuid4())}, now)
    assert ours(await deliveries.claim_due(now=now, lease=LEASE, limit=100)) == [event_id]


async def test_an_endpoint_from_before_owners_gets_one_when_an_admin_enables_it(
    client, admin
) -> None:
    legacy = await EndpointRepository().create(
        url="https://93.184.215.14/legacy",
        event_types=["*"],
        description="",
        secret="whsec_AAAA",
        now=datetime.now(UTC),
    )
    shown = await client.get(f"/api/webhooks/{legacy.id}", headers=admin.headers)
    data = shown.json()["data"]
    assert (data["createdBy"], data["ownerId"], data["enabled"]) == (None, None, True)
    adopted = await _patch(client, admin, str(legacy.id), {"enabled": True})
    assert adopted.status_code == 200, adopted.text
    assert (adopted.json()["data"]["createdBy"], adopted.json()["data"]["ownerId"]) == (
        None,
        admin.id,
    )
