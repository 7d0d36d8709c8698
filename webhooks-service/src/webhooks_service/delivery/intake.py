"""Events in: durable JetStream pull consumers turn each event into delivery rows, then ack.

One consumer per stream (``ORDERS``: ``orders.events.>``, ``USERS``: ``users.events.>``), the
shared ``api_shared.events.consumer`` on one NATS link, durable under ``DURABLE_PREFIX`` + the
stream, so several dispatchers share one position and a dispatcher that was down catches up.
For each event, what it changes here is applied first (``user_changes``: the endpoints of an
owner who lost admin or their account are disabled, a deleted user's deliveries and logged
events redacted), then one pending delivery per enabled endpoint that wants it and whose
audience may have it (``endpoints.audience``: an ``owner`` endpoint only the events about its
owner) is written and the delivery loop woken, then the event is kept in the event log
(``GET /api/events``, the event stream), and only then is the message acked: from there the
database is the durable queue (``deliverer`` works from it). A message that fails to be
written is nak'ed and comes back; one seen twice adds nothing (one delivery per event and
endpoint, one logged event per id). The streams belong to the services that
publish into them: a stream not there yet is waited for, not created.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime

import orjson
from nats.aio.msg import Msg
from nats.js.api import StreamConfig

from api_shared.events.consumer import DurableConsumer
from api_shared.events.credentials import NatsLogin
from api_shared.events.envelope import MalformedEventError
from api_shared.events.link import NatsLink
from api_shared.events.streams import ORDERS, USERS
from api_shared.frame import ReadinessCheck
from webhooks_service.clock import Clock
from webhooks_service.delivery.ports import DeliveryStore
from webhooks_service.delivery.user_changes import UserChanges
from webhooks_service.endpoints import EndpointStore, receivers
from webhooks_service.event_log import EventLogStore
from webhooks_service.events import IncomingEvent
from webhooks_service.personal_data import concerned_user

STREAMS: Sequence[StreamConfig] = (ORDERS, USERS)
DURABLE_PREFIX = "webhooks-dispatcher-"


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
    event_type, subject = str(fields["type"]), str(fields["subject"])
    return IncomingEvent(
        id=str(fields["id"]),
        type=event_type,
        subject=subject,
        stream=stream,
        stream_sequence=stream_sequence,
        payload=data.decode(),
        user_id=concerned_user(event_type, subject, document),
        time=event_time(document.get("time")),
    )


def event_time(value: object) -> datetime | None:
    """An event's ``time`` (RFC 3339) as an aware datetime; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _decoder(stream: str) -> Callable[[Msg], IncomingEvent]:
    def decode(message: Msg) -> IncomingEvent:
        return incoming_event(stream, message.metadata.sequence.stream, message.data)

    return decode


class EventIntake:
    """The consumers of every stream, on one NATS connection (a context Resource)."""

    def __init__(
        self,
        login: NatsLogin,
        endpoints: EndpointStore,
        deliveries: DeliveryStore,
        log: EventLogStore,
        clock: Clock,
        *,
        streams: Sequence[StreamConfig] = STREAMS,
        on_event: Callable[[str], None] = lambda stream: None,
        on_deliveries: Callable[[], None] = lambda: None,
        wait_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.endpoints, self.deliveries, self.log, self.clock = endpoints, deliveries, log, clock
        self.user_changes = UserChanges(endpoints, deliveries, clock, log)
        self.on_event = on_event
        self.on_deliveries = on_deliveries  # new deliveries were written (wakes the deliverer)
        self.link = NatsLink(login)
        self.consumers = [
            DurableConsumer(
                self.link,
                stream,
                durable=DURABLE_PREFIX + str(stream.name).lower(),
                subject=stream.subjects[0] if stream.subjects else ">",
                decode=_decoder(str(stream.name)),
                handler=self.accept,
                before_start=wait_ready,  # the schema at its latest migration, say
            )
            for stream in streams
        ]

    @property
    def connected(self) -> bool:
        return self.link.connected

    async def check(self) -> None:
        """A readiness check: raises while NATS is not connected."""
        if not self.connected:
            raise ConnectionError(f"NATS at {self.link.url} is not connected")

    def readiness_checks(self) -> Mapping[str, ReadinessCheck]:
        return {"nats": self.check}

    async def start(self) -> None:
        await self.link.start()
        for consumer in self.consumers:
            await consumer.start()

    async def stop(self) -> None:
        for consumer in reversed(self.consumers):
            await consumer.stop()
        await self.link.stop()

    async def accept(self, event: IncomingEvent) -> int:
        """Apply what ``event`` changes here, write one delivery of it per enabled endpoint
        that wants it and may have it, then keep it in the event log; how many were new.

        The deliveries come first: the delivery loop starts on them while the log write
        (the longer of the two, positions in order) goes on. They are two writes, not one
        transaction: each is idempotent (one delivery per event and endpoint; one row per
        event id), so a message that fails between them and comes back completes what is
        missing and repeats nothing."""
        await self.user_changes.apply(event)
        wanted = receivers(await self.endpoints.enabled(), event)
        added = await self.deliveries.add(event, wanted, self.clock())
        if added:
            self.on_deliveries()
        await self.log.record(event, self.clock())
        self.on_event(event.stream)
        return added
