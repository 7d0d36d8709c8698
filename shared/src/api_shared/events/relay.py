"""The relay: publishes outbox rows to JetStream, in order, and marks them once acked.

A batch goes out in waves: the first waiting row of every subject together (one socket
write, their acks read together), then each subject's next row once the wave was acked.
Publishing one row at a time and awaiting each ack cost a write, a read and several event
loop turns per event, most of the relay's CPU; awaiting a subject's earlier row before its
next keeps each subject's order on the stream even when a publish is lost.

Each row goes out with ``Nats-Msg-Id`` = the event id, so a row published twice (the relay
died after the ack but before its mark committed) is dropped by JetStream's duplicate window:
at-least-once from the outbox, effectively once on the stream.

**One relay at a time, on PostgreSQL.** Every replica of a service runs a relay. A batch runs
in one transaction that first takes ``pg_try_advisory_xact_lock``: the replica that gets it
publishes the oldest unpublished rows in ``id`` order and marks them in that transaction;
the others find the lock taken and try again at their next tick. Row locks with
``FOR UPDATE SKIP LOCKED`` alone would let two replicas each take a different row of the
same order and publish them out of order (replica B skips A's locked row 5 and publishes 6);
locking per subject fixes that but needs a query per subject head. One batch lock is simple,
keeps the order of every subject by construction, and a crashed holder frees it at once
(its connection ends). Its cost, one publisher at a time, is no limit in practice: a batch
is hundreds of acked publishes a second, far above the rate orders change. More replicas add
failover, not publishing throughput.

On SQLite (one process, ``make run``) there is one relay and no lock: a plain select, then
publish, then mark, with no transaction held while waiting for NATS (SQLite's single
connection would make every request wait for it).

**Woken by commits, polling as a safety net** (api_shared.events.wake). A row leaves as
soon as its transaction commits, not at the next poll: on PostgreSQL the row's transaction
notifies a channel, delivered on commit to every replica's relay (each holds one listening
connection; the lock above picks the one that publishes); on SQLite the transaction's
``after_commit`` wakes the process's relay. The relay still polls (``listening_idle_s``, 1 s,
while it listens; ``idle_s``, 0.1 s, while its listener is down or on SQLite), so a lost
wake costs at most a poll.

While NATS is down the rows wait; the relay retries with exponential backoff and jitter.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from nats.js import JetStreamContext
from nats.js.api import StreamConfig
from tortoise import connections
from tortoise.backends.base.client import BaseDBAsyncClient

from api_shared.background import BackgroundTask
from api_shared.events.envelope import CONTENT_TYPE, MESSAGE_ID_HEADER, nats_subject
from api_shared.events.link import Backoff, NatsLink
from api_shared.events.models import OutboxEvent
from api_shared.events.outbox import CONNECTION
from api_shared.events.settings import DEFAULT_HISTORY_RETENTION_S
from api_shared.events.streams import ensure_stream
from api_shared.events.wake import Listener, unwatch_locally, watch_locally
from api_shared.transactions import in_transaction

logger = logging.getLogger(__name__)

# Any constant 64-bit number: each service has its own database, so one key per database.
RELAY_LOCK_KEY = 0x6F7574626F78  # "outbox"
PUBLISH_TIMEOUT_S = 5.0
# The poll while PostgreSQL's notifications wake the relay: only a safety net then.
LISTENING_IDLE_S = 1.0


@dataclass(slots=True)
class RelayStats:
    """What ``/metrics`` reports about the relay."""

    published: int = 0
    duplicates: int = 0
    failures: int = 0
    oldest_unpublished_age_s: float = 0.0


class Relay(BackgroundTask):
    """Publishes this service's outbox to ``stream`` while the server runs."""

    def __init__(
        self,
        link: NatsLink,
        stream: StreamConfig,
        *,
        batch_size: int = 100,
        idle_s: float = 0.1,
        listening_idle_s: float = LISTENING_IDLE_S,
        backoff: Backoff | None = None,
        retention_s: float = DEFAULT_HISTORY_RETENTION_S,
    ) -> None:
        super().__init__("outbox-relay", self._run_forever)
        self.link, self.stream = link, stream
        # The poll: ``idle_s`` unless a PostgreSQL listener wakes the relay.
        self.batch_size, self.idle_s = batch_size, idle_s
        self.listening_idle_s = listening_idle_s
        self._wake = asyncio.Event()
        self.listener = Listener(self._wake)
        # Published rows are the subjects' history (EVENTS_HISTORY_RETENTION_S), purged after
        # it; each subject's numbering lives on in event_sequences.
        self.retention_s = retention_s
        self.backoff = backoff or Backoff()
        self.stats = RelayStats()
        self.healthy = False
        self._stream_ready = False

    async def ready(self) -> None:
        """A readiness check: raises unless the last round reached NATS."""
        if not self.healthy:
            raise ConnectionError("the outbox relay cannot reach NATS")

    async def run_once(self) -> int:
        """Publish one batch (at most ``batch_size`` rows); the number published."""
        js = self.link.jetstream()
        if not self._stream_ready:
            await ensure_stream(js, self.stream)
            self._stream_ready = True
        connection = connections.get(CONNECTION)
        if connection.capabilities.dialect != "postgres":
            published, error = await self._publish_pending(js, connection)
        else:
            async with in_transaction(CONNECTION) as transaction:
                if not await _take_batch_lock(transaction):
                    return 0
                published, error = await self._publish_pending(js, transaction)
        # Raised only now: the marks of what was acked commit first.
        if error is not None:
            raise error
        return published

    async def _publish_pending(
        self, js: JetStreamContext, db: BaseDBAsyncClient
    ) -> tuple[int, Exception | None]:
        rows = (
            await OutboxEvent.filter(published_at=None)
            .order_by("id")
            .limit(self.batch_size)
            .using_db(db)
        )
        acked: list[int] = []
        error: Exception | None = None
        for wave in publication_waves(rows):
            # One wave's publishes go out together (one write, their acks read together);
            # a subject has one row per wave, sent once its earlier rows were acked.
            outcomes = await asyncio.gather(
                *(self._publish(js, row) for row in wave), return_exceptions=True
            )
            for row, outcome in zip(wave, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    error = error or _as_exception(outcome)
                    continue
                acked.append(row.id)
                self.stats.duplicates += int(outcome)
            if error is not None:
                break  # a failed row's later rows must not overtake it: they wait
        if acked:
            await (
                OutboxEvent.filter(id__in=acked).using_db(db).update(published_at=datetime.now(UTC))
            )
            self.stats.published += len(acked)
        return len(acked), error

    async def _publish(self, js: JetStreamContext, row: OutboxEvent) -> bool:
        """Publish one row and wait for JetStream's ack; whether it was a duplicate."""
        ack = await js.publish(
            nats_subject(row.type),
            row.document.encode(),
            timeout=PUBLISH_TIMEOUT_S,
            stream=self.stream.name,
            headers={MESSAGE_ID_HEADER: row.event_id, "Content-Type": CONTENT_TYPE},
        )
        return bool(ack.duplicate)

    async def purge_published(self, now: datetime | None = None) -> int:
        """Delete rows published more than ``retention_s`` before ``now``; how many. A row
        published exactly ``retention_s`` ago stays until the next purge."""
        cutoff = (now or datetime.now(UTC)) - timedelta(seconds=self.retention_s)
        deleted: int = await OutboxEvent.filter(published_at__lt=cutoff).delete()
        return deleted

    async def _measure_lag(self) -> None:
        oldest = (
            await OutboxEvent.filter(published_at=None).order_by("id").first().only("created_at")
        )
        self.stats.oldest_unpublished_age_s = (
            0.0 if oldest is None else (datetime.now(UTC) - oldest.created_at).total_seconds()
        )

    async def _idle(self) -> None:
        """Wait for a wake (a commit) or the poll, whichever comes first."""
        connection = connections.get(CONNECTION)
        listening = await self.listener.ensure(connection)
        poll = self.listening_idle_s if listening else self.idle_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), poll)

    async def _run_forever(self) -> None:
        watch_locally(self._wake)
        try:
            await self._relay()
        finally:
            unwatch_locally(self._wake)
            await self.listener.close()

    async def _relay(self) -> None:
        while True:
            try:
                # Cleared before the round: a commit during it wakes the next one at once.
                self._wake.clear()
                published = await self.run_once()
                self.healthy = True
                self.backoff.reset()
                if published < self.batch_size:
                    await self._measure_lag()
                    await self._idle()
            except Exception as error:
                self.healthy = False
                self._stream_ready = False  # a server that lost its store needs it again
                self.stats.failures += 1
                delay = self.backoff.next_delay()
                logger.warning(
                    "outbox relay could not publish; retrying",
                    extra={"error": repr(error), "retry_in_s": round(delay, 2)},
                )
                with contextlib.suppress(Exception):
                    await self._measure_lag()
                await asyncio.sleep(delay)


def publication_waves(rows: Sequence[OutboxEvent]) -> list[list[OutboxEvent]]:
    """``rows`` (in id order) in waves: each subject's first row in the first, its second in
    the second...; a row's wave goes out only once the previous wave was acked."""
    waves: list[list[OutboxEvent]] = []
    depth: dict[str, int] = {}
    for row in rows:
        level = depth.get(row.subject, 0)
        depth[row.subject] = level + 1
        if level == len(waves):
            waves.append([])
        waves[level].append(row)
    return waves


def _as_exception(outcome: BaseException) -> Exception:
    if isinstance(outcome, Exception):
        return outcome
    raise outcome  # cancellation and the like are not a failed publish


async def _take_batch_lock(transaction: BaseDBAsyncClient) -> bool:
    rows = await transaction.execute_query_dict(
        "SELECT pg_try_advisory_xact_lock($1) AS taken", [RELAY_LOCK_KEY]
    )
    return bool(rows[0]["taken"])
