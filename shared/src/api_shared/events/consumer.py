"""A durable JetStream pull consumer: each event is handled, then acked.

Delivery is at least once: a handler that fails (or a process that dies before its ack) sees
the event again, so handlers must be idempotent (an event handled twice changes nothing the
second time). The consumer's position lives in JetStream under its durable name, so a
service that was down catches up on what was published meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig

from api_shared.background import BackgroundTask
from api_shared.events.envelope import CloudEvent, MalformedEventError
from api_shared.events.link import Backoff, NatsLink
from api_shared.events.streams import ensure_stream

logger = logging.getLogger(__name__)

Handler = Callable[[CloudEvent], Awaitable[None]]

ACK_WAIT_S = 30.0
FETCH_TIMEOUT_S = 1.0
RETRY_DELAY_S = 2.0


class DurableConsumer(BackgroundTask):
    """Feeds ``handler`` the events of ``stream`` on ``subject`` (wildcards allowed)."""

    def __init__(
        self,
        link: NatsLink,
        stream: StreamConfig,
        *,
        durable: str,
        subject: str,
        handler: Handler,
        batch_size: int = 20,
    ) -> None:
        super().__init__(f"consumer-{durable}", self._run_forever)
        self.link, self.stream = link, stream
        self.durable, self.subject, self.handler = durable, subject, handler
        self.batch_size = batch_size
        self.handled = 0

    async def _run_forever(self) -> None:
        backoff = Backoff()
        while True:
            try:
                await self._consume()
            except Exception as error:
                delay = backoff.next_delay()
                logger.warning(
                    "event consumer interrupted; resuming",
                    extra={"durable": self.durable, "error": repr(error), "retry_in_s": delay},
                )
                await asyncio.sleep(delay)

    async def _consume(self) -> None:
        js = self.link.jetstream()
        await ensure_stream(js, self.stream)
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
        try:
            while True:
                try:
                    messages = await subscription.fetch(self.batch_size, timeout=FETCH_TIMEOUT_S)
                except NatsTimeoutError:
                    continue
                for message in messages:
                    try:
                        event = CloudEvent.from_json(message.data)
                    except MalformedEventError as error:
                        logger.error(
                            "dropping a malformed event",
                            extra={"durable": self.durable, "error": str(error)},
                        )
                        await message.term()
                        continue
                    try:
                        await self.handler(event)
                    except Exception:
                        logger.warning(
                            "event handler failed; it will be redelivered",
                            extra={"durable": self.durable, "event": event.id},
                            exc_info=True,
                        )
                        await message.nak(delay=RETRY_DELAY_S)
                        continue
                    await message.ack()
                    self.handled += 1
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
