"""Events in: durable JetStream pull consumers turn each event into delivery rows, then ack.

One consumer per stream (``ORDERS``: ``orders.events.>``, ``USERS``: ``users.events.>``),
durable under ``DURABLE_PREFIX`` + the stream, so several dispatchers share one position and
a dispatcher that was down catches up. For each event one pending delivery per matching
endpoint is written, and only then is the message acked: from there the database is the
durable queue (``webhooks_service.delivery`` works from it). A message that fails to be
written is nak'ed and comes back; one seen twice adds nothing (one delivery per event and
endpoint). The streams belong to the services that publish into them: a stream not there yet
is waited for, not created.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Mapping

import nats
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError as StreamNotFoundError

from webhooks_service.event_types import matches
from webhooks_service.repository import DeliveryRepository, EndpointRepository, IncomingEvent
from webhooks_service.services import Clock

logger = logging.getLogger(__name__)

STREAMS: Mapping[str, str] = {"ORDERS": "orders.events.>", "USERS": "users.events.>"}
DURABLE_PREFIX = "webhooks-dispatcher-"
ACK_WAIT_S = 30.0
FETCH_BATCH = 50
FETCH_TIMEOUT_S = 1.0
RETRY_DELAY_S = 2.0
MAX_BACKOFF_S = 10.0


class MalformedEventError(ValueError):
    """A message that is not a CloudEvents JSON document with an id, a type and a subject."""


def incoming_event(stream: str, stream_sequence: int, data: bytes) -> IncomingEvent:
    """The event a message carries, its body kept byte for byte (it is what gets signed)."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise MalformedEventError("not JSON") from None
    if not isinstance(document, dict):
        raise MalformedEventError("not a JSON object")
    fields = {name: document.get(name) for name in ("id", "type", "subject")}
    for name, value in fields.items():
        if not isinstance(value, str) or not value or len(value) > 255:
            raise MalformedEventError(f"{name} must be a string of 1 to 255 characters")
    return IncomingEvent(
        id=str(fields["id"]),
        type=str(fields["type"]),
        subject=str(fields["subject"]),
        stream=stream,
        stream_sequence=stream_sequence,
        payload=data.decode(),
    )


class EventIntake:
    """The consumers of every stream, on one NATS connection (a context Resource)."""

    def __init__(
        self,
        nats_url: str,
        endpoints: EndpointRepository,
        deliveries: DeliveryRepository,
        clock: Clock,
        *,
        streams: Mapping[str, str] = STREAMS,
        on_event: Callable[[str], None] = lambda stream: None,
        wait_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.nats_url = nats_url
        self.endpoints, self.deliveries, self.clock = endpoints, deliveries, clock
        self.streams = streams
        self.on_event = on_event
        self.wait_ready = wait_ready  # the schema at its latest migration, say
        self._client: Client | None = None
        self._connecting = asyncio.Lock()  # one connection, whichever stream's task asks first
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.is_connected

    async def check(self) -> None:
        """A readiness check: raises while NATS is not connected."""
        if not self.connected:
            raise ConnectionError(f"NATS at {self.nats_url} is not connected")

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._consume_forever(stream, subject), name=f"intake-{stream}")
            for stream, subject in self.streams.items()
        ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def accept(self, event: IncomingEvent) -> int:
        """Write one delivery of ``event`` per endpoint that wants it; how many were new."""
        wanted = [e for e in await self.endpoints.all() if matches(e.event_types, event.type)]
        added = await self.deliveries.add(event, wanted, self.clock())
        self.on_event(event.stream)
        return added

    async def _connection(self) -> Client:
        async with self._connecting:
            if self._client is None:
                self._client = await self._connect()
            return self._client

    async def _connect(self) -> Client:
        # Once connected, nats-py reconnects by itself for as long as it takes.
        return await nats.connect(
            self.nats_url,
            name="webhooks-dispatcher",
            connect_timeout=2,
            allow_reconnect=True,
            max_reconnect_attempts=-1,
            reconnect_time_wait=1,
        )

    async def _consume_forever(self, stream: str, subject: str) -> None:
        if self.wait_ready is not None:
            await self.wait_ready()
        failures = 0
        while True:
            try:
                await self._consume(stream, subject)
            except asyncio.CancelledError:
                raise
            except StreamNotFoundError:
                # Its publisher has not made it yet (the stream is the publisher's to create).
                logger.info("waiting for the stream to exist", extra={"stream": stream})
                await asyncio.sleep(MAX_BACKOFF_S)
            except Exception as error:
                failures += 1
                delay = min(MAX_BACKOFF_S, 0.5 * 2**failures) * random.uniform(0.5, 1)  # noqa: S311
                logger.warning(
                    "event intake interrupted; resuming",
                    extra={"stream": stream, "error": repr(error), "retry_in_s": round(delay, 2)},
                )
                await asyncio.sleep(delay)

    async def _consume(self, stream: str, subject: str) -> None:
        js = (await self._connection()).jetstream()
        durable = DURABLE_PREFIX + stream.lower()
        subscription = await js.pull_subscribe(
            subject,
            durable=durable,
            stream=stream,
            config=ConsumerConfig(
                durable_name=durable,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ACK_WAIT_S,
                filter_subject=subject,
            ),
        )
        try:
            while True:
                try:
                    messages = await subscription.fetch(FETCH_BATCH, timeout=FETCH_TIMEOUT_S)
                except NatsTimeoutError:
                    continue
                for message in messages:
                    await self._take(stream, message)
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()

    async def _take(self, stream: str, message: Msg) -> None:
        try:
            event = incoming_event(stream, message.metadata.sequence.stream, message.data)
        except MalformedEventError as error:
            logger.error(
                "dropping a malformed event", extra={"stream": stream, "error": str(error)}
            )
            await message.term()
            return
        try:
            await self.accept(event)
        except Exception:
            logger.warning(
                "could not queue an event's deliveries; it comes back",
                extra={"stream": stream, "event": event.id},
                exc_info=True,
            )
            await message.nak(delay=RETRY_DELAY_S)
            return
        await message.ack()
