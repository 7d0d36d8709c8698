"""Endpoint secrets at rest and their rotation, over real HTTP on a real database.

The database never holds a secret as it is: each is sealed (Fernet) under the service's key.
A rotation keeps the replaced secret signing beside the new one for a grace period.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from webhooks_service.delivery.maintenance import Maintenance
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.models import Endpoint
from webhooks_service.secret_box import SecretBox, new_key
from webhooks_service.settings import DAY_S

BODY = {"url": "https://93.184.215.14/hooks/secrets", "eventTypes": ["orders.*"]}


async def _create(client: httpx.AsyncClient, admin) -> dict[str, Any]:
    created = await client.post("/api/webhooks", json=BODY, headers=admin.headers)
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    return data


def _maintenance(box: SecretBox, now: datetime) -> Maintenance:
    return Maintenance(
        EndpointRepository(),
        DeliveryRepository(),
        box,
        lambda: now,
        retention=timedelta(days=30),
        disable_after=timedelta(days=5),
    )


async def _stored(endpoint_id: str) -> Endpoint:
    return await Endpoint.get(id=endpoint_id)


async def test_the_database_holds_no_secret_as_it_is(client, admin, box: SecretBox) -> None:
    endpoint = await _create(client, admin)
    rotated = await client.post(
        f"/api/webhooks/{endpoint['id']}/rotate-secret", headers=admin.headers
    )
    new = rotated.json()["data"]["secret"]

    stored = await _stored(endpoint["id"])
    every_column = " ".join(str(value) for value in vars(stored).values())
    for secret in (endpoint["secret"], new):
        assert secret not in every_column
        assert secret.removeprefix("whsec_") not in every_column
    assert box.open(stored.secret) == new
    assert stored.previous_secret is not None
    assert box.open(stored.previous_secret) == endpoint["secret"]


async def test_a_rotation_keeps_the_replaced_secret_for_the_default_grace_period(
    client, admin
) -> None:
    endpoint = await _create(client, admin)
    assert endpoint["previousSecretUntil"] is None
    before = datetime.now(UTC)
    rotated = await client.post(
        f"/api/webhooks/{endpoint['id']}/rotate-secret", headers=admin.headers
    )
    assert rotated.status_code == 200, rotated.text
    until = datetime.fromisoformat(rotated.json()["data"]["previousSecretUntil"])
    # Rounded up to the second, as shown.
    latest = datetime.now(UTC) + timedelta(seconds=DAY_S + 1)
    assert before + timedelta(seconds=DAY_S) <= until <= latest
    assert until.microsecond == 0
    shown = await client.get(f"/api/webhooks/{endpoint['id']}", headers=admin.headers)
    assert (
        shown.json()["data"]["previousSecretUntil"] == rotated.json()["data"]["previousSecretUntil"]
    )


async def test_a_rotation_with_no_grace_period_ends_the_old_secret_at_once(client, admin) -> None:
    endpoint = await _create(client, admin)
    rotated = await client.post(
        f"/api/webhooks/{endpoint['id']}/rotate-secret",
        json={"graceSeconds": 0},
        headers=admin.headers,
    )
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["data"]["previousSecretUntil"] is None
    stored = await _stored(endpoint["id"])
    assert (stored.previous_secret, stored.previous_secret_until) == (None, None)


async def test_a_longer_grace_period_than_the_setting_is_clamped_to_it(client, admin) -> None:
    endpoint = await _create(client, admin)
    rotated = await client.post(
        f"/api/webhooks/{endpoint['id']}/rotate-secret",
        json={"graceSeconds": 7 * DAY_S},
        headers=admin.headers,
    )
    assert rotated.status_code == 200, rotated.text
    until = datetime.fromisoformat(rotated.json()["data"]["previousSecretUntil"])
    assert until <= datetime.now(UTC) + timedelta(seconds=DAY_S + 1)


async def test_a_second_rotation_replaces_the_first_ones_old_secret(client, admin, box) -> None:
    endpoint = await _create(client, admin)
    path = f"/api/webhooks/{endpoint['id']}/rotate-secret"
    first = (await client.post(path, headers=admin.headers)).json()["data"]["secret"]
    await client.post(path, json={"graceSeconds": 60}, headers=admin.headers)
    stored = await _stored(endpoint["id"])
    assert stored.previous_secret is not None
    assert box.open(stored.previous_secret) == first  # the original secret signs no more


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"graceSeconds": -1}, "graceSeconds"),
        ({"graceSeconds": 7 * DAY_S + 1}, "graceSeconds"),
        ({"graceSeconds": "60"}, "graceSeconds"),
        ({"graceSeconds": None}, "graceSeconds"),
        ({"secret": "whsec_chosen"}, "secret"),
    ],
)
async def test_an_invalid_rotation_is_refused_and_changes_nothing(
    client, admin, box, body, field
) -> None:
    endpoint = await _create(client, admin)
    path = f"/api/webhooks/{endpoint['id']}/rotate-secret"
    refused = await client.post(path, json=body, headers=admin.headers)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "VALIDATION_FAILED"
    assert field in refused.json()["error"]["fields"]
    stored = await _stored(endpoint["id"])
    assert box.open(stored.secret) == endpoint["secret"]
    assert stored.previous_secret is None


async def test_maintenance_seals_plaintext_secrets_and_ends_grace_periods(base_url, box) -> None:
    now = datetime.now(UTC)
    endpoints = EndpointRepository()
    legacy = await endpoints.create(
        url="https://93.184.215.14/legacy",
        event_types=["*"],
        description="",
        secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        now=now,
    )  # as stored before secrets were sealed
    ended = await endpoints.create(
        url="https://93.184.215.14/ended",
        event_types=["*"],
        description="",
        secret=box.seal("whsec_bmV3"),
        now=now,
    )
    await Endpoint.filter(id=ended.id).update(
        previous_secret=box.seal("whsec_b2xk"), previous_secret_until=now - timedelta(seconds=1)
    )
    done = await _maintenance(box, now).run()

    assert done["secretsResealed"] >= 1
    assert done["gracePeriodsEnded"] >= 1
    sealed = await _stored(str(legacy.id))
    assert not sealed.secret.startswith("whsec_")
    assert box.open(sealed.secret) == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    gone = await _stored(str(ended.id))
    assert (gone.previous_secret, gone.previous_secret_until) == (None, None)
    again = await _maintenance(box, now).run()
    assert (again["secretsResealed"], again["gracePeriodsEnded"]) == (0, 0)


async def test_maintenance_reseals_every_secret_under_a_new_first_key(
    base_url, box, secrets_key
) -> None:
    now = datetime.now(UTC)
    endpoint = await EndpointRepository().create(
        url="https://93.184.215.14/rekeyed",
        event_types=["*"],
        description="",
        secret=box.seal("whsec_a2V5"),
        now=now,
    )
    added = new_key()
    rotated = SecretBox([added, secrets_key])  # the new key first, the old one kept
    assert (await _maintenance(rotated, now).run())["secretsResealed"] >= 1
    stored = await _stored(str(endpoint.id))
    assert SecretBox([added]).open(stored.secret) == "whsec_a2V5"  # the old key may go now
    # Back under the session's key, for the other tests.
    await _maintenance(SecretBox([secrets_key, added]), now).run()
    assert box.open((await _stored(str(endpoint.id))).secret) == "whsec_a2V5"
