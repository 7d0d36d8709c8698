"""The broker's users on a real nats-server, with the permissions every deployment runs
(``api_shared.events.access``): nobody connects without a known NKey, and each process may
publish only its own events, manage only its own stream and consumers, read only its inbox.

A refused publish is not an exception on the publisher's side: the server drops it and says
so on the connection ("Permissions Violation"), which ``on_error`` collects. What matters is
checked on the streams themselves: nothing was added, nothing was removed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import nats
import pytest
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from api_devservers.nats_server import NatsServer
from api_shared.events.access import (
    INSPECTOR,
    ORDERS_SERVICE,
    USERS_SERVICE,
    WEBHOOKS_DISPATCHER,
    Identity,
)
from api_shared.events.credentials import NatsLogin, new_seed
from api_shared.events.envelope import CloudEvent
from api_shared.events.streams import ORDERS, USERS, ensure_stream
from api_testkit.events import (
    eventually,
    inspector,
    nats_client,
    read_stream,
    running_nats_server,
)

REFUSAL_TIMEOUT_S = 1.0  # a JetStream request the server dropped gets no answer at all


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path_factory.mktemp("nats")) as server:
        yield server


@pytest.fixture(scope="module")
async def streams(nats_server: NatsServer) -> None:
    """Both streams, each made by its publisher, each holding one genuine event."""
    for user, stream, event_type in (
        (USERS_SERVICE, USERS, "users.user.created"),
        (ORDERS_SERVICE, ORDERS, "orders.order.created"),
    ):
        async with nats_client(nats_server.login(user.name)) as client:
            js = client.jetstream()
            await ensure_stream(js, stream)
            event = forged(event_type)
            await js.publish(event.nats_subject, event.to_json(), stream=stream.name)


def forged(event_type: str) -> CloudEvent:
    service = event_type.split(".")[0]
    return CloudEvent(
        source=f"/{service}-service", type=event_type, subject="someone", data={"id": "someone"}
    )


async def stored(server: NatsServer) -> dict[str, list[str]]:
    """The event ids on each stream."""
    return {
        stream: [m.event.id for m in await read_stream(inspector(server), stream)]
        for stream in ("USERS", "ORDERS")
    }


class Refusals:
    """What the server said it refused on one connection (nats-py lowercases it)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def hear(self, error: Exception) -> None:
        self.messages.append(str(error).lower())

    def said(self, refusal: str) -> int:
        """How many times the server said ``refusal``."""
        return sum(refusal.lower() in message for message in self.messages)

    async def heard(self, refusal: str, times: int = 1) -> None:
        """Until the server said ``refusal`` ``times`` times (its -ERR may come after the
        PONG of a flush)."""

        async def enough() -> bool:
            return self.said(refusal) >= times

        await eventually(enough, f"the server to say {refusal!r} {times} times")


async def test_a_client_without_credentials_is_refused(nats_server: NatsServer) -> None:
    with pytest.raises(NatsError, match="Authorization Violation"):
        await nats.connect(nats_server.url, connect_timeout=2, allow_reconnect=False)


async def test_a_seed_the_server_does_not_know_is_refused(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger.nk"
    stranger.write_bytes(new_seed())

    with pytest.raises(NatsError, match="Authorization Violation"):
        async with nats_client(NatsLogin(nats_server.url, USERS_SERVICE.name, stranger)):
            pytest.fail("connected with a seed the server does not know")


@pytest.mark.parametrize(
    ("user", "event_type"),
    [
        (USERS_SERVICE, "orders.order.created"),
        (ORDERS_SERVICE, "users.user.deleted"),
        (WEBHOOKS_DISPATCHER, "orders.order.created"),
        (WEBHOOKS_DISPATCHER, "users.user.deleted"),
        (INSPECTOR, "users.user.deleted"),
    ],
    ids=lambda value: value.name if isinstance(value, Identity) else value,
)
async def test_no_user_may_publish_an_event_of_another_service(
    nats_server: NatsServer, streams: None, user: Identity, event_type: str
) -> None:
    before = await stored(nats_server)
    event = forged(event_type)
    stream = event_type.split(".")[0].upper()
    refusals = Refusals()

    refused = f'permissions violation for publish to "{event.nats_subject}"'
    async with nats_client(nats_server.login(user.name), on_error=refusals.hear) as client:
        await client.publish(event.nats_subject, event.to_json())  # core NATS
        with pytest.raises(NatsTimeoutError):  # and through JetStream: no ack ever comes
            await client.jetstream().publish(
                event.nats_subject, event.to_json(), stream=stream, timeout=REFUSAL_TIMEOUT_S
            )
        await refusals.heard(refused, times=2)

    assert await stored(nats_server) == before
    assert len(refusals.messages) == 2, refusals.messages


@pytest.mark.parametrize(
    ("user", "request_subject"),
    [
        (USERS_SERVICE, "$JS.API.STREAM.DELETE.ORDERS"),
        (USERS_SERVICE, "$JS.API.STREAM.UPDATE.ORDERS"),
        (ORDERS_SERVICE, "$JS.API.STREAM.PURGE.USERS"),
        (ORDERS_SERVICE, "$JS.API.STREAM.MSG.DELETE.USERS"),
        (WEBHOOKS_DISPATCHER, "$JS.API.STREAM.DELETE.USERS"),
        (WEBHOOKS_DISPATCHER, "$JS.API.CONSUMER.DELETE.USERS.orders-service-user-deletions"),
        (INSPECTOR, "$JS.API.STREAM.PURGE.ORDERS"),
    ],
    ids=lambda value: value.name if isinstance(value, Identity) else value,
)
async def test_no_user_may_manage_a_stream_or_consumer_that_is_not_its_own(
    nats_server: NatsServer, streams: None, user: Identity, request_subject: str
) -> None:
    before = await stored(nats_server)
    refusals = Refusals()

    async with nats_client(nats_server.login(user.name), on_error=refusals.hear) as client:
        with pytest.raises(NatsTimeoutError):
            await client.request(request_subject, b"{}", timeout=REFUSAL_TIMEOUT_S)
        await refusals.heard(f'permissions violation for publish to "{request_subject}"')

    assert await stored(nats_server) == before
    assert len(refusals.messages) == 1, refusals.messages


@pytest.mark.parametrize(
    ("user", "subject"),
    [
        (ORDERS_SERVICE, "_INBOX.webhooks-dispatcher.>"),  # another's replies and deliveries
        (USERS_SERVICE, "_INBOX.>"),
        (WEBHOOKS_DISPATCHER, "orders.events.>"),  # events only through its durable consumers
        (ORDERS_SERVICE, "users.events.>"),
    ],
    ids=lambda value: value.name if isinstance(value, Identity) else value,
)
async def test_no_user_may_listen_beyond_its_own_inbox(
    nats_server: NatsServer, user: Identity, subject: str
) -> None:
    refusals = Refusals()

    async with nats_client(nats_server.login(user.name), on_error=refusals.hear) as client:
        await client.subscribe(subject)
        await refusals.heard(f'permissions violation for subscription to "{subject}"')

    assert len(refusals.messages) == 1, refusals.messages


def acked(js: JetStreamContext, durable: str) -> Callable[[], Awaitable[bool]]:
    """Whether every message the consumer delivered was acked (an ack is not confirmed:
    JetStream takes it after the client sent it)."""

    async def check() -> bool:
        pending: int = (await js.consumer_info("USERS", durable)).num_ack_pending
        return pending == 0

    return check


async def test_each_user_does_its_own_work_under_its_permissions(
    nats_server: NatsServer, streams: None
) -> None:
    """users-service publishes a deletion; orders-service's and the dispatcher's durable
    consumers are created, fed and acked; nothing is refused on the way."""
    deletion = forged("users.user.deleted")
    refusals = Refusals()
    async with nats_client(nats_server.login(USERS_SERVICE.name), on_error=refusals.hear) as users:
        await users.jetstream().publish(deletion.nats_subject, deletion.to_json(), stream="USERS")

    for user, durable, subject in (
        (ORDERS_SERVICE, "orders-service-user-deletions", "users.events.user.deleted"),
        (WEBHOOKS_DISPATCHER, "webhooks-dispatcher-users", "users.events.>"),
    ):
        async with nats_client(nats_server.login(user.name), on_error=refusals.hear) as client:
            js = client.jetstream()
            subscription = await js.pull_subscribe(subject, durable=durable, stream="USERS")
            messages = await subscription.fetch(10, timeout=5)
            for message in messages:
                await message.ack()
            assert deletion.id in [CloudEvent.from_json(m.data).id for m in messages], user.name

            await eventually(acked(js, durable), f"{user.name}'s acks to be taken")

    assert refusals.messages == []
