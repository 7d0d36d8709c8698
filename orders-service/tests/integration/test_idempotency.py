"""Idempotency-Key on POST /orders: replays, reuse, in-progress, races, expiry and purging."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import httpx
import orjson
import pytest

from api_shared.background import Periodic
from api_shared.types import App
from api_testkit.callers import Caller
from api_testkit.gates import Gate
from orders_service.context import Context
from orders_service.models import IdempotencyRecord, IdempotencyState, Order


@pytest.fixture
def body(books: list[str]) -> dict[str, Any]:
    """An order of two of the catalog's first book."""
    return {"items": [{"bookId": books[0], "quantity": 2}], "note": "once"}


def _keyed(caller: Caller, key: str) -> dict[str, str]:
    return {**caller.headers, "Idempotency-Key": key}


async def _orders_of(caller: Caller) -> int:
    return await Order.filter(user_id=caller.id).count()


async def test_a_repeat_returns_the_first_response_and_creates_nothing_more(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, body: dict[str, Any]
) -> None:
    first = await client.post("/orders", json=body, headers=_keyed(customer, "k-1"))
    repeat = await client.post("/orders", json=body, headers=_keyed(customer, "k-1"))

    assert first.status_code == repeat.status_code == 201
    assert repeat.content == first.content
    assert repeat.headers["location"] == first.headers["location"]
    assert repeat.headers["etag"] == first.headers["etag"]
    assert repeat.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert await _orders_of(customer) == 1
    assert len(catalog.passed) == 1


async def test_the_first_response_is_stored_with_a_fingerprint_of_the_body(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    first = await client.post("/orders", json=body, headers=_keyed(customer, "k-stored"))

    record = await IdempotencyRecord.get(user_id=customer.id, key="k-stored")

    assert record.state == IdempotencyState.COMPLETED
    assert record.response_status == 201
    assert record.response_body == first.text  # byte for byte
    canonical = {"items": [{"book_id": body["items"][0]["bookId"], "quantity": 2}], "note": "once"}
    expected = hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()
    assert record.fingerprint == expected


async def test_a_repeat_of_a_stored_response_is_the_original_even_after_the_order_changed(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    first = await client.post("/orders", json=body, headers=_keyed(customer, "k-old"))
    await client.patch(first.headers["location"], json={"note": "new"}, headers=customer.headers)

    repeat = await client.post("/orders", json=body, headers=_keyed(customer, "k-old"))

    assert repeat.json() == first.json()
    assert repeat.json()["data"]["note"] == "once"


async def test_the_same_body_written_differently_is_the_same_request(
    client: httpx.AsyncClient, customer: Caller, books: list[str]
) -> None:
    body = {"items": [{"bookId": books[0], "quantity": 1}]}
    reordered_with_null_note = {"note": None, "items": [{"quantity": 1, "bookId": books[0]}]}

    first = await client.post("/orders", json=body, headers=_keyed(customer, "k-same"))
    repeat = await client.post(
        "/orders", json=reordered_with_null_note, headers=_keyed(customer, "k-same")
    )

    assert repeat.status_code == 201
    assert repeat.json() == first.json()
    assert await _orders_of(customer) == 1


async def test_a_different_body_with_the_same_key_is_422_and_creates_nothing(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    await client.post("/orders", json=body, headers=_keyed(customer, "k-2"))

    other = await client.post(
        "/orders", json={**body, "note": "twice"}, headers=_keyed(customer, "k-2")
    )

    assert other.status_code == 422
    assert other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert await _orders_of(customer) == 1


async def test_keys_belong_to_one_user(
    client: httpx.AsyncClient, customer: Caller, other_customer: Caller, body: dict[str, Any]
) -> None:
    mine = await client.post("/orders", json=body, headers=_keyed(customer, "shared"))
    theirs = await client.post("/orders", json=body, headers=_keyed(other_customer, "shared"))

    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["data"]["id"] != theirs.json()["data"]["id"]
    assert theirs.json()["data"]["userId"] == other_customer.id


async def test_a_repeat_while_the_first_is_running_is_409_in_progress(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, body: dict[str, Any]
) -> None:
    release = catalog.hold()
    first = asyncio.create_task(
        client.post("/orders", json=body, headers=_keyed(customer, "k-busy"))
    )
    await catalog.entered.wait()

    repeat = await client.post("/orders", json=body, headers=_keyed(customer, "k-busy"))
    other_body = await client.post(
        "/orders", json={**body, "note": "other"}, headers=_keyed(customer, "k-busy")
    )
    release.set()

    assert repeat.status_code == 409
    assert repeat.json()["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS"
    assert other_body.status_code == 422
    assert (await first).status_code == 201
    assert await _orders_of(customer) == 1


async def test_twenty_concurrent_posts_with_one_key_create_exactly_one_order(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    responses = await asyncio.gather(
        *(client.post("/orders", json=body, headers=_keyed(customer, "k-race")) for _ in range(20))
    )

    statuses = [response.status_code for response in responses]
    assert set(statuses) <= {201, 409}
    assert 201 in statuses
    bodies = {response.text for response in responses if response.status_code == 201}
    assert len(bodies) == 1
    assert await _orders_of(customer) == 1


async def test_of_twenty_concurrent_posts_one_runs_and_nineteen_are_told_it_is_in_progress(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, body: dict[str, Any]
) -> None:
    release = catalog.hold()
    tasks = [
        asyncio.create_task(client.post("/orders", json=body, headers=_keyed(customer, "k-20")))
        for _ in range(20)
    ]
    await catalog.entered.wait()
    pending = set(tasks)
    while len(pending) > 1:
        _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)

    early = [task.result() for task in tasks if task.done()]
    release.set()
    winner = await pending.pop()

    assert len(early) == 19
    assert {response.status_code for response in early} == {409}
    assert winner.status_code == 201
    assert len(catalog.passed) == 1
    assert await _orders_of(customer) == 1
    replay = await client.post("/orders", json=body, headers=_keyed(customer, "k-20"))
    assert replay.json() == winner.json()


async def test_a_failed_first_attempt_frees_the_key_for_a_retry(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, body: dict[str, Any]
) -> None:
    async with catalog.down():
        failed = await client.post("/orders", json=body, headers=_keyed(customer, "k-retry"))
    unknown = await client.post(
        "/orders",
        json={"items": [{"bookId": "nope", "quantity": 1}]},
        headers=_keyed(customer, "k-unknown"),
    )

    retried = await client.post("/orders", json=body, headers=_keyed(customer, "k-retry"))

    assert failed.status_code == 503
    assert unknown.status_code == 422
    assert retried.status_code == 201
    assert "idempotent-replayed" not in retried.headers
    assert await IdempotencyRecord.filter(user_id=customer.id, key="k-unknown").count() == 0
    assert await _orders_of(customer) == 1


async def test_a_record_older_than_24_hours_is_ignored(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    first = await client.post("/orders", json=body, headers=_keyed(customer, "k-day"))
    day_ago = datetime.now(UTC) - timedelta(hours=24, seconds=1)
    await IdempotencyRecord.filter(user_id=customer.id).update(created_at=day_ago)

    later = await client.post(
        "/orders", json={**body, "note": "other"}, headers=_keyed(customer, "k-day")
    )

    assert later.status_code == 201
    assert later.json()["data"]["id"] != first.json()["data"]["id"]
    assert await _orders_of(customer) == 2


async def test_purging_deletes_expired_records_and_keeps_fresh_ones(
    client: httpx.AsyncClient, customer: Caller, app: App, body: dict[str, Any]
) -> None:
    for key in ("k-expired", "k-fresh"):
        await client.post("/orders", json=body, headers=_keyed(customer, key))
    await IdempotencyRecord.filter(user_id=customer.id, key="k-expired").update(
        created_at=datetime.now(UTC) - timedelta(days=2)
    )

    context: Context = app.ctx.context
    purged = await context.orders.purge_expired_idempotency_records()

    running = {job.name for job in context.resources if isinstance(job, Periodic) and job.running}
    assert "purge_idempotency_records" in running  # the app also purges on its own, periodically
    assert purged >= 1
    # cast: Tortoise types values_list as tuples, even the flat list of one column.
    keys = cast(
        list[str],
        await IdempotencyRecord.filter(user_id=customer.id).values_list("key", flat=True),
    )
    assert keys == ["k-fresh"]


async def test_a_claim_abandoned_past_its_lease_is_taken_over_by_a_retry(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    crashed_at = datetime.now(UTC) - timedelta(minutes=5)
    canonical = {"items": [{"book_id": body["items"][0]["bookId"], "quantity": 2}], "note": "once"}
    await IdempotencyRecord.create(
        id=uuid.uuid4(),
        user_id=customer.id,
        key="k-crashed",
        fingerprint=hashlib.sha256(
            orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)
        ).hexdigest(),
        state=IdempotencyState.IN_PROGRESS,
        claim_token=uuid.uuid4(),
        claimed_at=crashed_at,
        created_at=crashed_at,
    )

    retried = await client.post("/orders", json=body, headers=_keyed(customer, "k-crashed"))

    assert retried.status_code == 201
    assert await _orders_of(customer) == 1


async def test_a_request_that_lost_its_claim_rolls_back_its_order(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, body: dict[str, Any]
) -> None:
    release = catalog.hold()
    first = asyncio.create_task(
        client.post("/orders", json=body, headers=_keyed(customer, "k-fenced"))
    )
    await catalog.entered.wait()
    # As if its lease ran out and another request took the key over meanwhile.
    await IdempotencyRecord.filter(user_id=customer.id, key="k-fenced").update(
        claim_token=uuid.uuid4()
    )
    release.set()

    response = await first

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS"
    assert await _orders_of(customer) == 0


async def test_a_keyed_creation_whose_client_hangs_up_still_completes_for_the_retry(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, body: dict[str, Any]
) -> None:
    release = catalog.hold()
    gone = asyncio.create_task(
        client.post("/orders", json=body, headers=_keyed(customer, "k-gone"))
    )
    await catalog.entered.wait()
    gone.cancel()  # the client (a gateway that timed out) closes the connection
    await asyncio.gather(gone, return_exceptions=True)
    await asyncio.sleep(0.05)  # the server notices the hang-up and cancels the handler
    release.set()
    for _ in range(100):
        record = await IdempotencyRecord.get_or_none(user_id=customer.id, key="k-gone")
        if record is not None and record.state == IdempotencyState.COMPLETED:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the abandoned creation never completed its key")

    retried = await client.post("/orders", json=body, headers=_keyed(customer, "k-gone"))

    assert retried.status_code == 201
    assert retried.headers["idempotent-replayed"] == "true"
    assert await _orders_of(customer) == 1


async def test_an_empty_or_oversized_key_is_400_naming_the_header(
    client: httpx.AsyncClient, customer: Caller, body: dict[str, Any]
) -> None:
    for key in ("", "k" * 256):
        response = await client.post("/orders", json=body, headers=_keyed(customer, key))
        assert response.status_code == 400
        assert list(response.json()["error"]["fields"]) == ["Idempotency-Key"]
    assert await _orders_of(customer) == 0
