"""An endpoint none of whose attempts succeeded for WEBHOOK_DISABLE_AFTER_S is disabled by the
dispatcher's upkeep, reason ``failing`` (docs/api.md#delivery). On a real database: attempts
recorded as the delivery loop records them, the upkeep as the dispatcher runs it (with a
short setting and a clock of its own), and admins' requests over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from api_testkit.callers import Caller
from webhooks_service.delivery.maintenance import Maintenance
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.models import Endpoint
from webhooks_service.secret_box import SecretBox

from .attempts import record_attempt

BODY = {"url": "https://93.184.215.14/hooks/failing", "eventTypes": ["orders.*"]}
DISABLE_AFTER = timedelta(hours=1)  # WEBHOOK_DISABLE_AFTER_S, short


async def _endpoint(client: httpx.AsyncClient, admin: Caller) -> dict[str, Any]:
    response = await client.post("/api/webhooks", json=BODY, headers=admin.headers)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def _failing_since(endpoint_id: str) -> datetime | None:
    return (await Endpoint.get(id=endpoint_id)).failing_since


def _upkeep(box: SecretBox, now: datetime, disabled: list[int]) -> Maintenance:
    return Maintenance(
        EndpointRepository(),
        DeliveryRepository(),
        box,
        lambda: now,
        retention=timedelta(days=30),
        disable_after=DISABLE_AFTER,
        on_disabled=disabled.append,
    )


async def test_the_failure_clock_starts_at_the_first_failure_and_stops_at_a_success(
    client, admin
) -> None:
    endpoint = await _endpoint(client, admin)
    start = datetime.now(UTC) - timedelta(minutes=10)
    assert await _failing_since(endpoint["id"]) is None

    await record_attempt(endpoint["id"], 500, start)
    await record_attempt(endpoint["id"], None, start + timedelta(minutes=1))
    assert await _failing_since(endpoint["id"]) == start

    await record_attempt(endpoint["id"], 204, start + timedelta(minutes=2))
    assert await _failing_since(endpoint["id"]) is None

    await record_attempt(endpoint["id"], 302, start + timedelta(minutes=3))  # a redirect fails
    assert await _failing_since(endpoint["id"]) == start + timedelta(minutes=3)


async def test_an_endpoint_failing_too_long_is_disabled_and_only_it(client, admin, box) -> None:
    now = datetime.now(UTC)
    failing, recent, recovered = [await _endpoint(client, admin) for _ in range(3)]
    long_ago = now - DISABLE_AFTER - timedelta(minutes=5)
    await record_attempt(failing["id"], 500, long_ago)
    await record_attempt(failing["id"], 503, now - timedelta(minutes=1))
    await record_attempt(recent["id"], 500, now - DISABLE_AFTER + timedelta(minutes=5))
    await record_attempt(recovered["id"], 500, long_ago)
    await record_attempt(recovered["id"], 200, now - timedelta(minutes=30))
    counted: list[int] = []

    done = await _upkeep(box, now, counted).run()
    again = await _upkeep(box, now, counted).run()

    assert done["endpointsDisabled"] >= 1
    assert again["endpointsDisabled"] == 0  # once, whoever runs the upkeep next
    assert sum(counted) == done["endpointsDisabled"]
    shown = {
        e["id"]: (await client.get(f"/api/webhooks/{e['id']}", headers=admin.headers)).json()[
            "data"
        ]
        for e in (failing, recent, recovered)
    }
    assert (shown[failing["id"]]["enabled"], shown[failing["id"]]["disabledReason"]) == (
        False,
        "failing",
    )
    assert datetime.fromisoformat(shown[failing["id"]]["disabledAt"]) <= now
    for kept in (recent, recovered):
        assert (shown[kept["id"]]["enabled"], shown[kept["id"]]["disabledReason"]) == (True, None)


async def test_enabling_a_failing_endpoint_again_restarts_its_clock(client, admin, box) -> None:
    now = datetime.now(UTC)
    endpoint = await _endpoint(client, admin)
    await record_attempt(endpoint["id"], 500, now - DISABLE_AFTER - timedelta(minutes=5))
    await _upkeep(box, now, []).run()
    path = f"/api/webhooks/{endpoint['id']}"
    assert (await client.get(path, headers=admin.headers)).json()["data"]["enabled"] is False

    enabled = await client.patch(path, json={"enabled": True}, headers=admin.headers)

    assert enabled.status_code == 200, enabled.text
    data = enabled.json()["data"]
    assert (data["enabled"], data["disabledReason"], data["disabledAt"]) == (True, None, None)
    assert await _failing_since(endpoint["id"]) is None
    await _upkeep(box, now, []).run()
    assert (await client.get(path, headers=admin.headers)).json()["data"]["enabled"] is True
