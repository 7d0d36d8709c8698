"""The event log (``GET /api/events``) on a real database, over real HTTP with real tokens:
what the intake keeps (once), whose history each event is, the filters, 404 for another's
event, redaction on a user's deletion, and the purge. With real NATS, processes and the
gateway: tests/e2e/test_event_history.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from api_shared.events.credentials import NatsLogin
from api_testkit.actors import customer_caller
from api_testkit.api_keys import create_key, key_headers
from api_testkit.callers import Caller
from api_testkit.events import cloud_event_document
from webhooks_service.delivery.intake import EventIntake, incoming_event
from webhooks_service.delivery.maintenance import Maintenance
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.event_log.repository import EventLogRepository
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Delivery, LoggedEvent

NOW = datetime.now(UTC).replace(microsecond=0)


def _event(
    event_type: str,
    subject: str,
    data: dict[str, Any],
    *,
    time: datetime = NOW,
    sequence: int = 1,
) -> IncomingEvent:
    """An event as a publisher writes it, read as the intake reads a message."""
    document = {**cloud_event_document(event_type, subject, data, at=time), "sequence": sequence}
    return incoming_event(event_type.split(".")[0].upper(), sequence, orjson.dumps(document))


def _order_event(user_id: str, *, subject: str | None = None, **kwargs: Any) -> IncomingEvent:
    order_id = subject or str(uuid.uuid4())
    data = {"id": order_id, "userId": user_id, "note": "ring twice"}
    return _event("orders.order.created", order_id, data, **kwargs)


def _intake() -> EventIntake:
    """The intake's handling of events, without its consumers (never started here)."""
    login = NatsLogin("nats://127.0.0.1:1", "webhooks-dispatcher", Path("unused.nk"))
    return EventIntake(
        login, EndpointRepository(), DeliveryRepository(), EventLogRepository(), lambda: NOW
    )


async def _listed(
    client: httpx.AsyncClient, caller: Caller | dict[str, str], **params: Any
) -> httpx.Response:
    headers = caller.headers if isinstance(caller, Caller) else caller
    return await client.get("/api/events", params={"limit": 100, **params}, headers=headers)


def _ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


@pytest.fixture
async def other_customer(users_api: httpx.AsyncClient) -> Caller:
    return await customer_caller(users_api)


async def test_the_intake_keeps_each_event_once_as_received_beside_its_deliveries(
    base_url,
) -> None:
    endpoint = await EndpointRepository().create(
        url="https://93.184.215.14/in", event_types=["*"], description="", secret="x", now=NOW
    )
    event = _order_event(str(uuid.uuid4()))
    intake = _intake()

    assert await intake.accept(event) >= 1
    assert await intake.accept(event) == 0  # a redelivered message adds nothing

    (logged,) = await LoggedEvent.filter(event_id=event.id)
    assert logged.payload == event.payload  # byte for byte
    assert (logged.type, logged.subject, logged.user_id) == (
        event.type,
        event.subject,
        event.user_id,
    )
    assert (logged.stream, logged.stream_sequence) == ("ORDERS", 1)
    assert logged.time == NOW
    assert await Delivery.filter(event_id=event.id, endpoint_id=endpoint.id).count() == 1


async def test_a_customer_lists_their_own_events_and_an_admin_everyones(
    client, customer, other_customer, admin
) -> None:
    log, subject = EventLogRepository(), str(uuid.uuid4())
    mine = _order_event(customer.id, subject=subject)
    theirs = _order_event(other_customer.id)
    nobodys = _event("users.user.deleted", str(uuid.uuid4()), {"id": "gone"})
    for event in (mine, theirs, nobodys):
        assert await log.record(event, NOW)

    assert _ids(await _listed(client, customer)) == [mine.id]
    assert _ids(await _listed(client, other_customer)) == [theirs.id]
    everyone = set(_ids(await _listed(client, admin, sort="-time")))
    assert {mine.id, theirs.id, nobodys.id} <= everyone

    response = await _listed(client, customer)
    assert response.json()["page"] == {"total": 1, "limit": 100, "offset": 0}
    # The document as delivered, so that a receiver de-duplicates by its id.
    assert response.json()["data"] == [orjson.loads(mine.payload)]


async def test_events_are_newest_first_and_filtered_by_type_and_subject(
    client, customer, admin
) -> None:
    log, order = EventLogRepository(), str(uuid.uuid4())
    created = _order_event(customer.id, subject=order, time=NOW - timedelta(minutes=2))
    shipped = _event(
        "orders.order.shipped",
        order,
        {"id": order, "userId": customer.id},
        time=NOW - timedelta(minutes=1),
        sequence=2,
    )
    other_order = _order_event(customer.id, time=NOW)
    profile = _event("users.user.updated", customer.id, {"id": customer.id, "name": "Ada"})
    for event in (created, shipped, other_order, profile):
        await log.record(event, NOW)

    newest_first = _ids(await _listed(client, customer))
    assert newest_first.index(profile.id) < newest_first.index(shipped.id)
    assert newest_first.index(shipped.id) < newest_first.index(created.id)
    oldest_first = _ids(await _listed(client, customer, sort="time"))
    assert oldest_first.index(created.id) < oldest_first.index(shipped.id)

    assert _ids(await _listed(client, customer, subject=order)) == [shipped.id, created.id]
    assert _ids(await _listed(client, customer, type="orders.order.created", subject=order)) == [
        created.id
    ]
    assert _ids(await _listed(client, customer, type="users.user.updated")) == [profile.id]
    assert _ids(await _listed(client, admin, subject=order, sort="time")) == [
        created.id,
        shipped.id,
    ]
    assert _ids(await _listed(client, customer, type="orders.order.nothing")) == []


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"userId": "someone"}, 400, "BAD_FILTER"),
        ({"status": "pending"}, 400, "BAD_FILTER"),
        ({"sort": "createdAt"}, 400, "BAD_SORT"),
        ({"type": ""}, 400, "VALIDATION_FAILED"),
        ({"subject": "x" * 256}, 400, "VALIDATION_FAILED"),
    ],
)
async def test_a_list_request_outside_the_contract_is_refused(
    client, customer, params: dict[str, str], status: int, code: str
) -> None:
    response = await client.get("/api/events", params=params, headers=customer.headers)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


async def test_a_customer_cannot_read_anothers_events_by_id(
    client, customer, other_customer, admin
) -> None:
    log = EventLogRepository()
    mine, theirs = _order_event(customer.id), _order_event(other_customer.id)
    await log.record(mine, NOW)
    await log.record(theirs, NOW)

    own = await client.get(f"/api/events/{mine.id}", headers=customer.headers)
    assert own.status_code == 200, own.text
    assert own.json()["data"] == orjson.loads(mine.payload)

    another = await client.get(f"/api/events/{theirs.id}", headers=customer.headers)
    unknown = await client.get(f"/api/events/{uuid.uuid4()}", headers=customer.headers)
    assert another.status_code == unknown.status_code == 404, another.text
    assert another.json()["error"] == unknown.json()["error"]
    assert another.json()["error"]["code"] == "NOT_FOUND"

    as_admin = await client.get(f"/api/events/{theirs.id}", headers=admin.headers)
    assert as_admin.status_code == 200, as_admin.text


async def test_the_routes_need_a_token_and_an_api_key_needs_events_read(
    client, users_api, customer
) -> None:
    event = _order_event(customer.id)
    await EventLogRepository().record(event, NOW)
    assert (await client.get("/api/events")).status_code == 401

    narrow = key_headers(await create_key(users_api, customer.headers, "orders:read"))
    for path in ("/api/events", f"/api/events/{event.id}"):
        refused = await client.get(path, headers=narrow)
        assert refused.status_code == 403, refused.text
        assert "events:read" in refused.json()["error"]["message"]

    reader = key_headers(await create_key(users_api, customer.headers, "events:read"))
    assert _ids(await _listed(client, reader)) == [event.id]
    one = await client.get(f"/api/events/{event.id}", headers=reader)
    assert one.status_code == 200, one.text


async def test_a_deleted_users_events_are_redacted_and_leave_their_history(
    client, customer, other_customer, admin
) -> None:
    intake = _intake()
    theirs = [
        _event("users.user.created", customer.id, {"id": customer.id, "email": "a@example.com"}),
        _order_event(customer.id),
    ]
    kept = _order_event(other_customer.id)
    for event in (*theirs, kept):
        await intake.accept(event)

    deletion = _event("users.user.deleted", customer.id, {"id": customer.id})
    await intake.accept(deletion)
    await intake.accept(deletion)  # redelivered: nothing more changes
    # orders-service deletes the user's orders after the user: that event comes later.
    late = _order_event(customer.id)
    await intake.accept(late)

    assert _ids(await _listed(client, customer)) == []
    for event in (*theirs, late):
        shown = await client.get(f"/api/events/{event.id}", headers=admin.headers)
        assert shown.status_code == 200, shown.text
        document = shown.json()["data"]
        assert "data" not in document
        original = orjson.loads(event.payload)
        assert {k: original[k] for k in ("id", "type", "subject", "time", "sequence")} == {
            k: document[k] for k in ("id", "type", "subject", "time", "sequence")
        }
        assert await LoggedEvent.filter(event_id=event.id, user_id__isnull=True).exists()
    assert _ids(await _listed(client, other_customer)) == [kept.id]
    assert (await client.get(f"/api/events/{deletion.id}", headers=admin.headers)).json()[
        "data"
    ] == orjson.loads(deletion.payload)


async def test_the_upkeep_purges_events_recorded_before_the_retention(base_url, box) -> None:
    log, user, now = EventLogRepository(), str(uuid.uuid4()), datetime.now(UTC)
    old, recent = _order_event(user), _order_event(user)
    await log.record(old, now - timedelta(days=31))
    await log.record(recent, now - timedelta(days=29))
    upkeep = Maintenance(
        EndpointRepository(),
        DeliveryRepository(),
        box,
        lambda: now,
        retention=timedelta(days=30),
        disable_after=timedelta(days=5),
        log=log,
        log_retention=timedelta(days=30),
    )

    done = await upkeep.run()

    assert done["eventsPurged"] >= 1
    assert not await LoggedEvent.exists(event_id=old.id)
    assert await LoggedEvent.exists(event_id=recent.id)


async def test_a_test_event_joins_its_requesters_history(client, customer) -> None:
    created = await client.post(
        "/api/webhooks",
        json={"url": "https://93.184.215.14/hooks", "eventTypes": ["orders.*"]},
        headers=customer.headers,
    )
    assert created.status_code == 201, created.text
    endpoint_id = created.json()["data"]["id"]
    sent = await client.post(f"/api/webhooks/{endpoint_id}/test-events", headers=customer.headers)
    assert sent.status_code == 202, sent.text

    listed = await _listed(client, customer, type="webhooks.endpoint.tested", subject=endpoint_id)
    assert _ids(listed) == [sent.json()["data"]["eventId"]]
    assert listed.json()["data"][0] == sent.json()["data"]["event"]
