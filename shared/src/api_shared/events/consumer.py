"""A durable JetStream pull consumer: each message is decoded, handled, then acked.

Delivery is at least once: a handler that fails (or a process that dies before its ack) sees
the event again, so handlers must be idempotent (an event handled twice changes nothing the
second time). The consumer's position lives in JetStream under its durable name, so a
service that was down catches up on what was published meanwhile.

What a handler receives is its consumer's ``decode`` of the message: ``cloud_event`` (the
parsed envelope) for a service reacting to events, or anything else a consumer needs from
the message (webhooks keeps the body byte for byte and its place in the stream). A message
its decoder refuses (``MalformedEventError``) is dropped for good, never redelivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig
from nats.js.errors import NotFoundError as StreamNotFoundError

from api_shared.background import BackgroundTask
from api_shared.events.envelope import MESSAGE_ID_HEADER, CloudEvent, MalformedEventError
from api_shared.events.link import Backoff, NatsLink

logger = logging.getLogger(__name__)

T = TypeVar("T")

ACK_WAIT_S = 30.0
FETCH_TIMEOUT_S = 1.0
# One message a fetch. After a quiet spell nats-py's fetch(n) sends a lingering pull and,
# once the first message came, may wait for the rest of the n until the pull expires: an
# event arriving alone then waited up to FETCH_TIMEOUT_S before its handler ran. fetch(1)
# returns it at once; messages are handled one by one anyway, and a backlog costs one local
# round trip per message.
FETCH_BATCH = 1
RETRY_DELAY_S = 2.0
STREAM_WAIT_S = 5.0


def cloud_event(message: Msg) -> CloudEvent:
    """The message's event, its envelope checked (``MalformedEventError`` otherwise)."""
    return CloudEvent.from_json(message.data)


class DurableConsumer(BackgroundTask, Generic[T]):
    """Feeds ``handler`` the ``decode``d messages of ``stream`` on ``subject`` (wildcards).

    A stream not there yet is waited for: it is its publisher's to create, and a consumer's
    NATS user may not (``access``). ``before_start`` is awaited once before the first
    message (a schema's latest migration, say).
    """

    def __init__(
        self,
        link: NatsLink,
        stream: StreamConfig,
        *,
        durable: str,
        subject: str,
        decode: Callable[[Msg], T],
        handler: Callable[[T], Awaitable[object]],  # what it returns is not used
        before_start: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(f"consumer-{durable}", self._run_forever)
        self.link, self.stream = link, stream
        self.durable, self.subject = durable, subject
        self.decode, self.handler = decode, handler
        self.before_start = before_start
        self.handled = 0

    async def _run_forever(self) -> None:
        if self.before_start is not None:
            await self.before_start()
        backoff = Backoff()
        while True:
            try:
                await self._consume(backoff)
            except StreamNotFoundError:
                logger.info("waiting for the stream to exist", extra={"stream": self.stream.name})
                await asyncio.sleep(STREAM_WAIT_S)
            except Exception as error:
                delay = backoff.next_delay()
                logger.warning(
                    "event consumer interrupted; resuming",
                    extra={"durable": self.durable, "error": repr(error), "retry_in_s": delay},
                )
                await asyncio.sleep(delay)

    async def _consume(self, backoff: Backoff) -> None:
        js = self.link.jetstream()
        subscription = await js.pull_subscribe(
            self.subject,
            durable=self.durable,
            stream=self.stream.name,
            config=ConsumerConfig(
                durable_name=self.durable,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ACK_WAIT_S,
                filter_subject=self.subject,
            ),
        )
        backoff.reset()  # subscribed: the next interruption starts from the shortest delay
        try:
            while True:
                try:
                    messages = await subscription.fetch(FETCH_BATCH, timeout=FETCH_TIMEOUT_S)
                except NatsTimeoutError:
                    continue
                for message in messages:
                    await self._take(message)
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()

    async def _take(self, message: Msg) -> None:
        try:
            decoded = self.decode(message)
        except MalformedEventError as error:
            logger.error(
                "dropping a malformed event", extra={"durable": self.durable, "error": str(error)}
            )
            await message.term()
            return
        try:
            await self.handler(decoded)
        except Exception:
            logger.warning(
                "event handler failed; it will be redelivered",
                extra={
                    "durable": self.durable,
                    "event": (message.headers or {}).get(MESSAGE_ID_HEADER),
                },
                exc_info=True,
            )
            await message.nak(delay=RETRY_DELAY_S)
            return
        await message.ack()
        self.handled += 1
