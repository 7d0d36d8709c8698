"""The event log, live: one feed per API process reads each newly logged event once and
hands it to the event streams (``GET /api/events/stream``) whose caller may see it.

Events are logged by the dispatcher (those it takes in from JetStream) and by the API (those
webhooks-service makes), each at the log's next position, in commit order
(``event_log.repository``). The feed keeps the position it has read up to; woken, it reads
what is after it, in order, and offers each event to every subscription that wants it.
Woken on PostgreSQL by the notification each log write sends on commit (``LOG_CHANNEL``, to
every replica); on SQLite by this process's own writes, else by its poll. A subscription
taken when the feed stood at position p is offered every event after p, once, in order: a
stream that resumes (``Last-Event-ID``) reads the log up to p, then goes live.

Bounds: at most ``max_streams`` subscriptions per process, ``max_per_caller`` per caller (an
account: its API keys' streams are its own) and ``max_per_address`` per client address, which
is below ``max_streams``: no one address fills a process, so the next caller from elsewhere
still gets a stream. Each holds at most ``buffer`` events its client has not taken yet.
A client slower than that loses its subscription (``overflowed``) and resumes from the log
with Last-Event-ID, so no stream makes the process hold more than ``buffer`` events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter, deque
from collections.abc import AsyncIterator

from tortoise import connections

from api_shared.errors import RateLimitedError, UnavailableError
from api_shared.events.wake import Listener
from webhooks_service.event_log.ports import EventLogReader
from webhooks_service.models import LoggedEvent

logger = logging.getLogger(__name__)

LOG_CHANNEL = "event_log"  # notified by every log write's transaction (repository._append)
READ_BATCH = 500  # events read from the log per query
RETRY_S = 1.0  # after a failed read (the database restarting, say)
# users-service's word that an account changed hands: its streams end (``_end_account``).
ACCOUNT_CLAIMED = "users.user.claimed"

# The feeds of this process: SQLite's wake (a feed adds its event while it runs).
_local: set[asyncio.Event] = set()


def wake_local_feeds() -> None:
    """Wake this process's feeds (an ``after_commit`` callback of a log write)."""
    for wake in _local:
        wake.set()


class Subscription:
    """What one stream is offered: the events of ``user_id`` (everyone's when None), of
    ``event_type`` when set, from ``position`` on."""

    def __init__(
        self, caller: str, user_id: str | None, event_type: str | None, buffer: int
    ) -> None:
        self.caller, self.user_id, self.event_type = caller, user_id, event_type
        self.position = 0  # the feed's position when it was taken (set by subscribe)
        self.ended: str | None = None  # why it ended: "overflowed", "shutdown"
        self._buffer = buffer
        self._events: deque[LoggedEvent] = deque()
        self._ready = asyncio.Event()

    def wants(self, event: LoggedEvent) -> bool:
        return (self.user_id is None or event.user_id == self.user_id) and (
            self.event_type is None or event.type == self.event_type
        )

    def offer(self, event: LoggedEvent) -> None:
        if self.ended is not None:
            return
        if len(self._events) >= self._buffer:
            self._events.clear()  # the client resumes from the log: hold nothing for it
            self.end("overflowed")
            return
        self._events.append(event)
        self._ready.set()

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
        self._ready.set()

    async def wait(self, timeout_s: float) -> None:
        """Until an event is offered, the subscription ends, or ``timeout_s`` passed."""
        if not self._events and self.ended is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout_s)
        self._ready.clear()

    def take(self) -> list[LoggedEvent]:
        """The events offered and not taken yet, oldest first."""
        events = list(self._events)
        self._events.clear()
        return events


class EventFeed:
    """The process's feed (a context Resource). ``subscribe`` waits until it has its first
    position, so a stream never starts from a guess."""

    def __init__(
        self,
        log: EventLogReader,
        *,
        max_streams: int,
        max_per_caller: int,
        max_per_address: int,
        buffer: int,
        idle_s: float,
        listening_idle_s: float,
    ) -> None:
        self.log = log
        self.max_streams, self.max_per_caller, self.buffer = max_streams, max_per_caller, buffer
        self.max_per_address = max_per_address
        self.idle_s, self.listening_idle_s = idle_s, listening_idle_s
        self.position = 0
        self._subscriptions: set[Subscription] = set()
        self._per_caller: Counter[str] = Counter()
        self._per_address: Counter[str] = Counter()
        self._wake = asyncio.Event()
        self._listener = Listener(self._wake, LOG_CHANNEL)
        self._started = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def open_streams(self) -> int:
        return len(self._subscriptions)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="event-feed")

    async def stop(self) -> None:
        self.end_all("shutdown")
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def end_all(self, reason: str) -> None:
        """End every subscription (the server is stopping: clients reconnect elsewhere)."""
        for subscription in self._subscriptions:
            subscription.end(reason)

    @contextlib.asynccontextmanager
    async def subscription(
        self,
        caller: str,
        user_id: str | None,
        event_type: str | None,
        address: str | None = None,
    ) -> AsyncIterator[Subscription]:
        """A subscription for the length of the block; 429 when ``caller`` (an account) or
        ``address`` (the client's, as ``api_shared.ratelimit.address_key`` names it; None: not
        counted, unit tests) holds their most streams, 503 when the process holds its most."""
        await self._started.wait()
        if self._per_caller[caller] >= self.max_per_caller:
            raise RateLimitedError(
                5,
                f"At most {self.max_per_caller} event streams may be open at once per account, "
                "its API keys' included.",
            )
        if address is not None and self._per_address[address] >= self.max_per_address:
            raise RateLimitedError(
                5,
                f"At most {self.max_per_address} event streams may be open at once per client "
                "address.",
            )
        if len(self._subscriptions) >= self.max_streams:
            raise UnavailableError("This replica holds its most event streams; try again.")
        subscription = Subscription(caller, user_id, event_type, self.buffer)
        subscription.position = self.position
        self._subscriptions.add(subscription)
        self._per_caller[caller] += 1
        if address is not None:
            self._per_address[address] += 1
        try:
            yield subscription
        finally:
            self._subscriptions.discard(subscription)
            _release(self._per_caller, caller)
            if address is not None:
                _release(self._per_address, address)

    async def _run(self) -> None:
        _local.add(self._wake)
        try:
            while True:
                try:
                    await self._follow()
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    logger.warning(
                        "event feed could not read the log", extra={"error": repr(error)}
                    )
                    await asyncio.sleep(RETRY_S)
        finally:
            _local.discard(self._wake)
            await self._listener.close()

    async def _follow(self) -> None:
        if not self._started.is_set():
            self.position = await self.log.newest_position()
            self._started.set()
        while True:
            self._wake.clear()  # before the read: a commit during it wakes the next one
            while await self._read_once() == READ_BATCH:
                pass
            listening = await self._listener.ensure(connections.get("default"))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._wake.wait(), self.listening_idle_s if listening else self.idle_s
                )

    async def _read_once(self) -> int:
        """Offer the events after the position to the subscriptions; how many were read."""
        events = await self.log.after(
            self.position, user_id=None, event_type=None, limit=READ_BATCH
        )
        # No await from here on: a subscription taken meanwhile stood at the old position,
        # so it is offered these too; one taken after sees the new position.
        for event in events:
            if event.type == ACCOUNT_CLAIMED:
                self._end_account(event.subject, "account claimed")
            for subscription in self._subscriptions:
                if subscription.wants(event):
                    subscription.offer(event)
            self.position = event.position
        return len(events)

    def _end_account(self, user_id: str, reason: str) -> None:
        """End the streams of the account ``user_id`` (its keys' included): whoever opened
        them held the account before it was claimed. Before the claim's own event is offered:
        they are not sent it, nor anything after it."""
        for subscription in self._subscriptions:
            if subscription.caller == f"user:{user_id}" or subscription.user_id == user_id:
                subscription.end(reason)


def _release(counts: Counter[str], holder: str) -> None:
    """One stream fewer for ``holder``; none left: forgotten (the counters stay as small as
    the streams open)."""
    counts[holder] -= 1
    if counts[holder] <= 0:
        del counts[holder]
