"""The event stream (``GET /api/events/stream``) served by webhooks-service as a process of
its own (on the session's database, with short beats and checks), read over real HTTP by
a Server-Sent Events client that is not ours (httpx-sse), with real tokens and API keys from
users-service: live events in order and only the caller's, the resume by Last-Event-ID, the
filter, the caps (per account, its keys included; per client address; per process), the
heartbeat, the refusal of an ended session's token at open, and the ends (session ended,
server stopping). Through the gateway, with events published on NATS:
tests/e2e/test_event_stream.py and tests/e2e/test_hostile_input_streams.py."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from httpx_sse import EventSource, ServerSentEvent, aconnect_sse

from api_testkit.actors import customer_caller
from api_testkit.api_keys import create_key, key_headers
from api_testkit.callers import Caller
from api_testkit.events import cloud_event_document
from api_testkit.ports import free_port
from api_testkit.processes import Service
from webhooks_service.delivery.intake import incoming_event
from webhooks_service.event_log.repository import EventLogRepository
from webhooks_service.events import IncomingEvent
from webhooks_service.secret_box import new_key
from webhooks_service.settings import Settings

# The session's app, served here, is what opens this process's ORM (the log writes below).
pytestmark = pytest.mark.usefixtures("base_url")

READ_TIMEOUT_S = 15.0  # a generous bound on a wait, never a measured figure
MAX_PER_CALLER = 2


def _event(event_type: str, subject: str, data: dict[str, Any]) -> IncomingEvent:
    document = cloud_event_document(event_type, subject, data)
    return incoming_event(event_type.split(".")[0].upper(), 1, orjson.dumps(document))


def _order_event(user_id: str, event_type: str = "orders.order.created") -> IncomingEvent:
    order_id = str(uuid.uuid4())
    return _event(event_type, order_id, {"id": order_id, "userId": user_id})


async def _log(*events: IncomingEvent) -> None:
    """Log ``events`` as the dispatcher does, in this order."""
    log = EventLogRepository()
    for event in events:
        assert await log.record(event, datetime.now(UTC))


def _api_process(settings: Settings, folder: Path, **extra: str) -> Service:
    """``python -m webhooks_service serve`` on the session's database, with short beats and
    checks, a small cap, users-service's word never kept, and ``extra`` variables. A process
    of its own: an app served in this process would share the session app's ORM, and close
    it on stopping."""
    key_file = folder / "webhook-secrets.key"
    key_file.write_bytes(new_key() + b"\n")
    port = free_port()
    env = {
        **os.environ,
        "WEBHOOKS_DATABASE_URL": settings.database_url,
        "WEBHOOKS_PORT": str(port),
        "JWKS_URL": settings.jwks_url,
        "USERS_SERVICE_URL": ",".join(settings.users_service_urls),
        "WEBHOOK_SECRETS_KEY_FILE": str(key_file),
        "STANDING_CACHE_S": "0",
        "EVENTS_STREAM_HEARTBEAT_S": "0.2",
        "EVENTS_STREAM_RECHECK_S": "0.2",
        "EVENTS_STREAM_MAX_PER_CALLER": str(MAX_PER_CALLER),
        **extra,
    }
    command = [sys.executable, "-m", "webhooks_service", "serve"]
    return Service("webhooks-api", command, env, folder / "api.log", port)


@asynccontextmanager
async def _running(settings: Settings, folder: Path, **extra: str) -> AsyncIterator[Service]:
    service = _api_process(settings, folder, **extra)
    service.start()
    try:
        await service.until_ready()
        yield service
    finally:
        await asyncio.to_thread(service.stop)


@pytest.fixture(scope="module")
async def stream_api(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        _running(settings, tmp_path_factory.mktemp("stream-api")) as service,
        httpx.AsyncClient(base_url=service.url, timeout=READ_TIMEOUT_S) as client,
    ):
        yield client


@asynccontextmanager
async def _stream(
    client: httpx.AsyncClient, headers: dict[str, str], **params: str
) -> AsyncIterator[EventSource]:
    """An open stream (its headers received, so its subscription taken)."""
    async with aconnect_sse(
        client, "GET", "/api/events/stream", headers=headers, params=params
    ) as source:
        assert source.response.status_code == 200, await source.response.aread()
        yield source


async def _next_events(source: EventSource, count: int) -> list[ServerSentEvent]:
    """The next ``count`` events of ``source`` (comments and ``retry`` lines skipped)."""
    events: list[ServerSentEvent] = []
    async with asyncio.timeout(READ_TIMEOUT_S):
        async for sse in source.aiter_sse():
            if sse.event != "message" or sse.data:  # a bare retry line parses as an empty one
                events.append(sse)
            if len(events) == count:
                return events
    return events


async def test_a_customer_sees_their_own_events_as_they_are_logged_and_no_one_elses(
    stream_api, customer, admin
) -> None:
    mine = [_order_event(customer.id), _order_event(customer.id, "orders.order.confirmed")]
    theirs = _order_event(str(uuid.uuid4()))
    async with _stream(stream_api, customer.headers) as source:
        assert source.response.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert source.response.headers["cache-control"] == "no-store"
        await _log(mine[0], theirs, mine[1])
        received = await _next_events(source, 2)
    assert [(sse.id, sse.event) for sse in received] == [(e.id, e.type) for e in mine]
    assert [sse.json() for sse in received] == [orjson.loads(e.payload) for e in mine]


async def test_a_stream_resumed_after_an_event_yields_the_rest_exactly_once(
    stream_api, customer
) -> None:
    first, second, third, fourth = (_order_event(customer.id) for _ in range(4))
    await _log(first, second, third)
    resumed = {**customer.headers, "Last-Event-ID": first.id}
    async with _stream(stream_api, resumed) as source:
        await _log(fourth)
        received = await _next_events(source, 3)
    assert [sse.id for sse in received] == [second.id, third.id, fourth.id]


async def test_an_admin_sees_every_users_events_of_the_type_asked_for(
    stream_api, admin, customer
) -> None:
    order, update = _order_event(customer.id), _event("users.user.updated", customer.id, {})
    async with _stream(stream_api, admin.headers, type="users.user.updated") as source:
        await _log(order, update)
        (received,) = await _next_events(source, 1)
    assert (received.id, received.event) == (update.id, "users.user.updated")


async def test_resuming_after_an_event_not_the_callers_or_unknown_is_404(
    stream_api, customer
) -> None:
    someone_elses = _order_event(str(uuid.uuid4()))
    await _log(someone_elses)
    for last_id in (someone_elses.id, str(uuid.uuid4())):
        response = await stream_api.get(
            "/api/events/stream", headers={**customer.headers, "Last-Event-ID": last_id}
        )
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "NOT_FOUND"
        assert "Last-Event-ID" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"subject": "x"}, "BAD_FILTER"),
        ({"type": ""}, "VALIDATION_FAILED"),
        ({"type": "x" * 256}, "VALIDATION_FAILED"),
    ],
)
async def test_a_bad_filter_is_a_contract_error(
    stream_api, customer, query: dict[str, str], code: str
) -> None:
    response = await stream_api.get("/api/events/stream", params=query, headers=customer.headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == code


async def test_a_client_that_takes_only_json_is_refused_and_one_that_takes_events_is_not(
    stream_api, customer
) -> None:
    refused = await stream_api.get(
        "/api/events/stream", headers={**customer.headers, "Accept": "application/json"}
    )
    assert refused.status_code == 406, refused.text
    assert "text/event-stream" in refused.json()["error"]["message"]
    # What EventSource sends.
    async with _stream(stream_api, {**customer.headers, "Accept": "text/event-stream"}):
        pass


async def test_an_api_key_needs_events_read(stream_api, users_api, customer) -> None:
    reader = await create_key(users_api, customer.headers, "events:read")
    other = await create_key(users_api, customer.headers, "orders:read")
    refused = await stream_api.get("/api/events/stream", headers=key_headers(other))
    assert refused.status_code == 403, refused.text
    assert "events:read" in refused.json()["error"]["message"]
    event = _order_event(customer.id)
    async with _stream(stream_api, key_headers(reader)) as source:
        await _log(event)
        (received,) = await _next_events(source, 1)
    assert received.id == event.id


async def test_a_caller_holds_at_most_the_cap_of_streams_at_once(stream_api, customer) -> None:
    async with _stream(stream_api, customer.headers), _stream(stream_api, customer.headers):
        refused = await stream_api.get("/api/events/stream", headers=customer.headers)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "RATE_LIMITED"
        assert int(refused.headers["retry-after"]) > 0
    # The closed ones count no more, once the server has seen their connections go (it
    # learns that asynchronously, so the next stream may have to be asked for again).
    statuses: list[int] = []
    async with asyncio.timeout(READ_TIMEOUT_S):
        while not statuses or statuses[-1] == 429:
            async with stream_api.stream(
                "GET", "/api/events/stream", headers=customer.headers
            ) as response:
                statuses.append(response.status_code)
            if statuses[-1] == 429:
                await asyncio.sleep(0.05)
    assert statuses[-1] == 200, statuses


async def test_an_api_keys_streams_count_against_its_owners_cap(
    stream_api, users_api, customer
) -> None:
    keys = [await create_key(users_api, customer.headers, "events:read") for _ in range(3)]
    async with _stream(stream_api, customer.headers), _stream(stream_api, key_headers(keys[0])):
        refused = [
            await stream_api.get("/api/events/stream", headers=key_headers(key)) for key in keys[1:]
        ]
    for answer in refused:
        assert answer.status_code == 429, answer.text
        assert "per account, its API keys' included" in answer.json()["error"]["message"]


async def test_streams_are_capped_per_client_address_and_another_address_is_served(
    settings: Settings, users_api: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Three per address, four in the process: the address the gateway resolved (X-Real-IP)
    is the one counted."""
    callers = [await customer_caller(users_api) for _ in range(3)]
    here, elsewhere, third = (
        {"X-Real-IP": address} for address in ("203.0.113.5", "198.51.100.9", "2001:db8::7")
    )
    caps = {"EVENTS_STREAM_MAX": "4", "EVENTS_STREAM_MAX_PER_ADDRESS": "3"}
    async with (
        _running(settings, tmp_path, **caps) as service,
        httpx.AsyncClient(base_url=service.url, timeout=READ_TIMEOUT_S) as client,
        _stream(client, {**callers[0].headers, **here}),
        _stream(client, {**callers[0].headers, **here}),
        _stream(client, {**callers[1].headers, **here}),
    ):
        crowded = await client.get("/api/events/stream", headers={**callers[2].headers, **here})
        async with _stream(client, {**callers[2].headers, **elsewhere}):
            full = await client.get("/api/events/stream", headers={**callers[1].headers, **third})
    assert crowded.status_code == 429, crowded.text
    assert "per client address" in crowded.json()["error"]["message"]
    assert full.status_code == 503, full.text  # the process's own cap, reached from elsewhere


async def test_a_token_whose_session_ended_cannot_open_a_stream(
    stream_api, users_api, customer
) -> None:
    ended = await users_api.delete("/api/auth/sessions/current", headers=customer.headers)
    assert ended.status_code == 204, ended.text

    refused = await stream_api.get("/api/events/stream", headers=customer.headers)

    assert refused.status_code == 401, refused.text
    assert refused.json()["error"]["code"] == "UNAUTHENTICATED"


async def test_a_quiet_stream_carries_heartbeats(stream_api, customer) -> None:
    async with _stream(stream_api, customer.headers) as source:
        lines: list[str] = []
        async with asyncio.timeout(READ_TIMEOUT_S):
            async for line in source.response.aiter_lines():
                lines.append(line)
                if line == ": heartbeat":
                    break
    assert lines[0] == "retry: 2000"  # how long a client waits before it reconnects
    assert ": heartbeat" in lines


async def test_a_stream_ends_when_its_session_ends(stream_api, users_api, customer) -> None:
    async with _stream(stream_api, customer.headers) as source:
        ended = await users_api.delete("/api/auth/sessions/current", headers=customer.headers)
        assert ended.status_code == 204, ended.text
        async with asyncio.timeout(READ_TIMEOUT_S):
            remaining = [sse async for sse in source.aiter_sse() if sse.data]
    assert remaining == []  # it ended cleanly, with no event after


async def test_a_stream_ends_cleanly_when_the_server_stops(
    settings: Settings, tmp_path: Path, customer: Caller
) -> None:
    async with (
        _running(settings, tmp_path) as service,
        httpx.AsyncClient(base_url=service.url) as client,
        _stream(client, customer.headers) as source,
    ):
        stopping = asyncio.create_task(asyncio.to_thread(service.stop))  # SIGTERM
        async with asyncio.timeout(READ_TIMEOUT_S):
            # The body ends with its last chunk: reading it whole raises nothing.
            await source.response.aread()
        assert await stopping == 0  # it exited of itself, within its grace
