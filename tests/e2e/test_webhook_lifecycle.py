"""A customer's endpoint over its life, through the whole stack: a secret rotation during
which both secrets sign and after which only the new one does (checked with the Standard
Webhooks reference library), and an endpoint that keeps answering 500 disabled by the
dispatcher's upkeep, its owner told on another endpoint, then enabled again by the owner and
sent what waited.

The failing endpoint runs on a stack of its own whose dispatcher gives up on an endpoint
after 3 s (``WEBHOOK_DISABLE_AFTER_S``, 5 days by default) and looks every second.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from api_testkit.actors import customer
from api_testkit.events import eventually
from api_testkit.orders import place
from api_testkit.stack import Stack, start_stack
from api_testkit.webhooks import webhook_receiver

pytestmark = [
    pytest.mark.processes,  # the receivers listen on this machine's loopback
    pytest.mark.needs(
        webhooks_service="1.2.0", users_service="1.3.0", gateway="1.3.0", orders_service="1.2.0"
    ),
]

GRACE_S = 2
FAILING = {
    "WEBHOOK_DISABLE_AFTER_S": "3",
    "WEBHOOK_PURGE_INTERVAL_S": "1",  # the upkeep, which disables failing endpoints
    "WEBHOOK_RETRY_DELAYS_S": "1,1,1,1,1,1,1,1,1,1",
}


async def register(
    gateway: httpx.AsyncClient, headers: dict[str, str], url: str, *types: str
) -> dict[str, Any]:
    created = await gateway.post(
        "/api/webhooks", json={"url": url, "eventTypes": list(types)}, headers=headers
    )
    assert created.status_code == 201, created.text
    endpoint: dict[str, Any] = created.json()["data"]
    return endpoint


def verifies(secret: str, body: bytes, headers: dict[str, str]) -> bool:
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


async def test_during_a_rotation_both_secrets_sign_and_after_it_only_the_new_one(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    async with webhook_receiver() as receiver:
        endpoint = await register(gateway, headers, receiver.url(), "orders.order.*")
        base = f"/api/webhooks/{endpoint['id']}"
        rotated = await gateway.post(
            f"{base}/secrets", json={"graceSeconds": GRACE_S}, headers=headers
        )
        assert rotated.status_code == 200, rotated.text
        old, new = endpoint["secret"], rotated.json()["data"]["secret"]

        during = await gateway.post(f"{base}/test-events", headers=headers)
        assert during.status_code in {201, 202}, during.text
        first = (await receiver.wait_for("hook", 1))[0]
        await asyncio.sleep(GRACE_S + 1.5)  # the overlap ends on a whole second after GRACE_S
        after = await gateway.post(f"{base}/test-events", headers=headers)
        assert after.status_code in {201, 202}, after.text
        second = (await receiver.wait_for("hook", 2))[1]

    assert verifies(old, first.body, first.headers)
    assert verifies(new, first.body, first.headers)
    assert len(first.headers["webhook-signature"].split()) == 2
    assert verifies(new, second.body, second.headers)
    assert not verifies(old, second.body, second.headers)


@pytest.fixture(scope="module")
async def failing_stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with start_stack(tmp_path_factory.mktemp("failing"), FAILING) as stack:
        yield stack


async def test_an_endpoint_failing_past_the_threshold_is_disabled_and_its_owner_enables_it(
    failing_stack: Stack,
) -> None:
    async with (
        httpx.AsyncClient(base_url=failing_stack.gateway_url, timeout=15.0) as gateway,
        webhook_receiver() as receiver,
    ):
        _, headers = await customer(gateway)
        receiver.scripts["broken"] = [500] * 10_000
        broken = await register(gateway, headers, receiver.url("broken"), "orders.order.*")
        notices = await register(
            gateway, headers, receiver.url("notices"), "webhooks.endpoint.disabled"
        )
        placed = await place(gateway, headers)
        assert placed.status_code == 201, placed.text
        order_id = placed.json()["data"]["id"]
        base = f"/api/webhooks/{broken['id']}"

        async def disabled() -> bool:
            shown = (await gateway.get(base, headers=headers)).json()["data"]
            return shown["enabled"] is False and shown["disabledReason"] == "failing"

        await eventually(disabled, "the failing endpoint disabled by the upkeep")
        notice = (await receiver.wait_for("notices", 1))[0]
        event = Webhook(notices["secret"]).verify(notice.body, notice.headers)

        receiver.scripts["broken"].clear()  # the receiver is mended: 200 from now on
        enabled = await gateway.patch(base, json={"enabled": True}, headers=headers)

        async def order_delivered() -> bool:
            deliveries = (await gateway.get(f"{base}/deliveries", headers=headers)).json()
            return any(
                d["subject"] == order_id and d["status"] == "delivered" for d in deliveries["data"]
            )

        await eventually(order_delivered, "the waiting delivery sent once enabled")

    assert event["type"] == "webhooks.endpoint.disabled"
    assert event["subject"] == broken["id"]
    assert event["data"]["reason"] == "failing"
    assert enabled.status_code == 200, enabled.text
    assert (enabled.json()["data"]["enabled"], enabled.json()["data"]["disabledReason"]) == (
        True,
        None,
    )
