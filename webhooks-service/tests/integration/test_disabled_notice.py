"""When the dispatcher's upkeep disables an endpoint that kept failing, its owner is told: a
``webhooks.endpoint.disabled`` event is queued for their other enabled endpoints that want it
and may have it (docs/api.md#delivery). On a real database, the upkeep as the dispatcher runs
it (with a short setting and a clock of its own), endpoints made over real HTTP."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import httpx
import orjson
import pytest

from api_testkit.actors import customer_caller
from api_testkit.callers import Caller
from webhooks_service.delivery.maintenance import Maintenance
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.models import Delivery, DeliveryStatus
from webhooks_service.secret_box import SecretBox

from .attempts import record_attempt

DISABLE_AFTER = timedelta(hours=1)
EVENT_TYPE = "webhooks.endpoint.disabled"


async def _endpoint(
    client: httpx.AsyncClient, caller: Caller, event_types: list[str], **more: object
) -> dict[str, Any]:
    body = {"url": f"https://93.184.215.14/hooks/{uuid4()}", "eventTypes": event_types, **more}
    response = await client.post("/api/webhooks", json=body, headers=caller.headers)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def _notices(endpoint_id: str) -> list[Delivery]:
    return list(await Delivery.filter(endpoint_id=endpoint_id, event_type=EVENT_TYPE))


async def test_the_owner_of_an_endpoint_disabled_as_failing_is_told_on_their_other_endpoints(
    client, admin, customer, users_api, box: SecretBox, caplog: pytest.LogCaptureFixture
) -> None:
    someone_else = await customer_caller(users_api)
    failing = await _endpoint(client, customer, ["orders.*"])
    told = await _endpoint(client, customer, ["webhooks.*", "orders.*"])
    everything = await _endpoint(client, customer, ["*"])
    not_wanted = await _endpoint(client, customer, ["orders.*"])  # does not want that type
    switched_off = await _endpoint(client, customer, ["*"])
    off = await client.patch(
        f"/api/webhooks/{switched_off['id']}", json={"enabled": False}, headers=customer.headers
    )
    assert off.status_code == 200
    strangers = await _endpoint(client, someone_else, ["*"])  # another customer's
    admins = await _endpoint(client, admin, ["*"])  # every user's events, but not the owner's
    now = datetime.now(UTC)
    since = now - DISABLE_AFTER - timedelta(minutes=5)
    await record_attempt(failing["id"], 500, since)
    upkeep = Maintenance(
        EndpointRepository(),
        DeliveryRepository(),
        box,
        lambda: now,
        retention=timedelta(days=30),
        disable_after=DISABLE_AFTER,
    )

    with caplog.at_level(logging.INFO, logger="webhooks_service.delivery.maintenance"):
        done = await upkeep.run()
        again = await upkeep.run()

    assert done["endpointsDisabled"] >= 1
    assert again["endpointsDisabled"] == 0
    shown = await client.get(f"/api/webhooks/{failing['id']}", headers=customer.headers)
    assert (shown.json()["data"]["enabled"], shown.json()["data"]["disabledReason"]) == (
        False,
        "failing",
    )
    (notice,) = await _notices(told["id"])
    (same,) = await _notices(everything["id"])
    assert notice.event_id == same.event_id  # one event, a delivery per endpoint
    for endpoint in (failing, not_wanted, switched_off, strangers, admins):
        assert await _notices(endpoint["id"]) == [], endpoint
    assert (notice.status, notice.subject) == (DeliveryStatus.PENDING, failing["id"])
    assert notice.user_id == customer.id  # redacted if the owner is deleted
    event = orjson.loads(notice.payload)
    assert {k: v for k, v in event.items() if k not in ("id", "time")} == {
        "specversion": "1.0",
        "source": "/webhooks-service",
        "type": EVENT_TYPE,
        "subject": failing["id"],
        "datacontenttype": "application/json",
        "data": {
            "endpointId": failing["id"],
            "reason": "failing",
            "failingSince": since.isoformat(timespec="seconds")[:19] + "Z",
            "disabledAt": shown.json()["data"]["disabledAt"],
        },
    }
    # Listed with the owner's other endpoint's deliveries, as any other.
    listed = await client.get(f"/api/webhooks/{told['id']}/deliveries", headers=customer.headers)
    assert [d["eventType"] for d in listed.json()["data"]] == [EVENT_TYPE]
    (line,) = [
        record
        for record in caplog.records
        if record.getMessage() == "webhook endpoint disabled: its owner told"
        and getattr(record, "endpoint", None) == failing["id"]
    ]
    assert (getattr(line, "owner", None), getattr(line, "deliveries", None)) == (customer.id, 2)


async def test_an_owner_with_no_other_endpoint_is_told_nothing_and_nothing_breaks(
    client, customer, box: SecretBox
) -> None:
    failing = await _endpoint(client, customer, ["*"])
    now = datetime.now(UTC)
    await record_attempt(failing["id"], 500, now - DISABLE_AFTER - timedelta(minutes=1))
    upkeep = Maintenance(
        EndpointRepository(),
        DeliveryRepository(),
        box,
        lambda: now,
        retention=timedelta(days=30),
        disable_after=DISABLE_AFTER,
    )
    await upkeep.run()
    shown = await client.get(f"/api/webhooks/{failing['id']}", headers=customer.headers)
    assert shown.json()["data"]["disabledReason"] == "failing"
    assert await _notices(failing["id"]) == []
