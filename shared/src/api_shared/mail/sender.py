"""The mail sender: sends the outbox's due mail over SMTP, marks it sent, retries the rest.

A round takes the due rows (not sent, their next attempt due, attempts left) in ``id`` order
and sends each with its own Message-ID. Sent, a row gets ``sent_at``; failed, one more
attempt, its next attempt pushed back (exponential, with jitter, at most ``retry_max_s``)
and its error; after ``MAIL_MAX_ATTEMPTS`` (or at once when the server refuses it for good,
a 5xx answer) it is given up: its row stays, to look into, and ``mail_given_up`` counts it.
A server that cannot be reached fails the round's rows without a connection attempt each.

**Several replicas, on PostgreSQL.** Every replica of a service runs a sender. A round runs in
one transaction that takes its rows with ``SELECT ... FOR UPDATE SKIP LOCKED``: another
replica's round skips them and takes the next ones, so no two send one row. Mail has no
order to keep across rows (unlike events: ``api_shared.events.relay``), so row locks are
enough and replicas send side by side. On SQLite (one process) there is no lock: select,
send, mark each.

A crash between a send and its mark sends that mail again at the next round, with the same
Message-ID, which receivers de-duplicate by: at least once, in practice once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from prometheus_client.registry import Collector
from tortoise import connections
from tortoise.backends.base.client import BaseDBAsyncClient

from api_shared.background import BackgroundTask
from api_shared.events.link import Backoff
from api_shared.events.outbox import CONNECTION
from api_shared.mail.message import Mail
from api_shared.mail.models import OutboxMail
from api_shared.mail.settings import MailSettings
from api_shared.mail.smtp import Closable, MailRefusedError, SmtpTransport, Transport, build_message
from api_shared.metrics import Reading, Readings
from api_shared.transactions import in_transaction

logger = logging.getLogger(__name__)

RETRY_INITIAL_S = 5.0
RETRY_MAX_S = 600.0
PURGE_INTERVAL_S = 3600.0
ERROR_LENGTH = 500  # OutboxMail.last_error


def retry_delay(
    attempts: int,
    *,
    initial_s: float = RETRY_INITIAL_S,
    maximum_s: float = RETRY_MAX_S,
    rng: random.Random | None = None,
) -> float:
    """The wait after a mail's ``attempts``-th failed attempt: doubling from ``initial_s``,
    at most ``maximum_s``, drawn between half of that and all of it (mails that failed
    together, a server down, do not all come back in one burst)."""
    ceiling = min(maximum_s, initial_s * 2 ** min(max(attempts, 1) - 1, 62))
    uniform = rng.uniform if rng is not None else random.uniform
    return uniform(ceiling / 2, ceiling)


@dataclass(slots=True)
class MailStats:
    """What ``/metrics`` reports about the sender."""

    sent: int = 0
    failures: int = 0  # failed attempts (a mail retried counts each time)
    given_up: int = 0
    oldest_unsent_age_s: float = 0.0


class MailSender(BackgroundTask):
    """Sends this service's mail outbox while the server runs (a context ``Resource``,
    ``Measured``). Without ``SMTP_URL`` and no ``transport`` given, it sends nothing: the
    mail waits, and the lag metric says how long."""

    def __init__(
        self,
        settings: MailSettings,
        *,
        transport: Transport | None = None,
        batch_size: int = 20,
        retry_initial_s: float = RETRY_INITIAL_S,
        retry_max_s: float = RETRY_MAX_S,
    ) -> None:
        super().__init__("mail-sender", self._run_forever)
        self.settings = settings
        if transport is None and settings.smtp is not None:
            transport = SmtpTransport(settings)
        self.transport = transport
        self.batch_size = batch_size
        self.retry_initial_s, self.retry_max_s = retry_initial_s, retry_max_s
        self.stats = MailStats()
        self.healthy = False  # the last attempt reached the server
        self._wake = asyncio.Event()
        self._round_full = False
        self._round_backoff = Backoff(initial_s=0.5, maximum_s=30.0)
        self._purged_at = -math.inf

    def wake(self) -> None:
        """Start the next round now rather than after the idle pause (a caller that just
        committed a mail may; the pause bounds the wait anyway)."""
        self._wake.set()

    async def start(self) -> None:
        if self.transport is None:
            logger.warning(
                "SMTP_URL is not set: mail is recorded in the outbox and not sent",
                extra={"from": self.settings.mail_from},
            )
        await super().start()

    async def run_once(self) -> int:
        """Send one round of due mail (at most ``batch_size``); the number sent."""
        if self.transport is None:
            return 0
        transport = self.transport
        connection = connections.get(CONNECTION)
        try:
            if connection.capabilities.dialect != "postgres":
                rows = await self._due_rows(connection, lock=False)
                return await self._send_rows(transport, rows, connection)
            async with in_transaction(CONNECTION) as transaction:
                rows = await self._due_rows(transaction, lock=True)
                return await self._send_rows(transport, rows, transaction)
        finally:
            if isinstance(transport, Closable):
                await transport.close()

    async def purge_sent(self) -> int:
        """Delete rows sent longer than ``MAIL_SENT_RETENTION_DAYS`` ago; how many."""
        retention = timedelta(days=self.settings.mail_sent_retention_days)
        deleted: int = await OutboxMail.filter(sent_at__lt=datetime.now(UTC) - retention).delete()
        return deleted

    def collectors(self) -> Sequence[Collector]:
        return (Readings(mail_readings(self)),)

    async def _due_rows(self, db: BaseDBAsyncClient, *, lock: bool) -> list[OutboxMail]:
        query = (
            OutboxMail.filter(
                sent_at=None,
                next_attempt_at__lte=datetime.now(UTC),
                attempts__lt=self.settings.mail_max_attempts,
            )
            .order_by("id")
            .limit(self.batch_size)
            .using_db(db)
        )
        if lock:
            query = query.select_for_update(skip_locked=True)
        rows = await query
        self._round_full = len(rows) == self.batch_size
        return rows

    async def _send_rows(
        self, transport: Transport, rows: Sequence[OutboxMail], db: BaseDBAsyncClient
    ) -> int:
        sent = 0
        unreachable: Exception | None = None
        for row in rows:
            if unreachable is not None:
                # Not tried: the server was not reachable a moment ago.
                await self._failed(row, db, unreachable, permanent=False)
                continue
            try:
                message = build_message(
                    Mail(to=row.recipient, subject=row.subject, text=row.text, html=row.html),
                    sender=self.settings.mail_from,
                    message_id=row.message_id,
                    date=row.created_at,
                )
            except ValueError as error:  # a row no attempt could send
                await self._failed(row, db, error, permanent=True)
                continue
            try:
                await transport.send(message)
            except MailRefusedError as error:
                self.healthy = True
                await self._failed(row, db, error, permanent=error.permanent)
            except Exception as error:
                self.healthy = False
                unreachable = error
                await self._failed(row, db, error, permanent=False)
            else:
                self.healthy = True
                await self._sent(row, db)
                sent += 1
        return sent

    async def _sent(self, row: OutboxMail, db: BaseDBAsyncClient) -> None:
        await OutboxMail.filter(id=row.id).using_db(db).update(sent_at=datetime.now(UTC))
        self.stats.sent += 1
        logger.info(
            "mail sent",
            extra={"messageId": row.message_id, "mailId": row.id, "attempt": row.attempts + 1},
        )

    async def _failed(
        self, row: OutboxMail, db: BaseDBAsyncClient, error: Exception, *, permanent: bool
    ) -> None:
        attempts = row.attempts + 1
        given_up = permanent or attempts >= self.settings.mail_max_attempts
        if permanent:
            # No attempts left: the due rows are those with attempts below the maximum.
            attempts = max(attempts, self.settings.mail_max_attempts)
        delay = retry_delay(attempts, initial_s=self.retry_initial_s, maximum_s=self.retry_max_s)
        reason = describe(error)
        await (
            OutboxMail.filter(id=row.id)
            .using_db(db)
            .update(
                attempts=attempts,
                next_attempt_at=datetime.now(UTC) + timedelta(seconds=delay),
                last_error=reason,
            )
        )
        self.stats.failures += 1
        fields = {"messageId": row.message_id, "mailId": row.id, "attempts": attempts}
        if given_up:
            self.stats.given_up += 1
            logger.error("mail given up", extra={**fields, "error": reason})
        else:
            logger.warning(
                "mail not sent; retrying",
                extra={**fields, "error": reason, "retry_in_s": round(delay, 2)},
            )

    async def _measure_lag(self) -> None:
        oldest = (
            await OutboxMail.filter(sent_at=None, attempts__lt=self.settings.mail_max_attempts)
            .order_by("id")
            .first()
            .only("id", "created_at")
        )
        self.stats.oldest_unsent_age_s = (
            0.0 if oldest is None else (datetime.now(UTC) - oldest.created_at).total_seconds()
        )

    async def _maintain(self) -> None:
        """Between rounds: the lag metric, and the purge of old sent rows once an hour
        (every replica may: deleting what is long sent is idempotent)."""
        await self._measure_lag()
        if time.monotonic() - self._purged_at >= PURGE_INTERVAL_S:
            purged = await self.purge_sent()
            self._purged_at = time.monotonic()
            logger.debug("sent mail purged", extra={"purged": purged})

    async def _idle(self) -> None:
        try:
            async with asyncio.timeout(self.settings.mail_send_interval_s):
                await self._wake.wait()
        except TimeoutError:
            pass
        self._wake.clear()

    async def _run_forever(self) -> None:
        while True:
            try:
                await self.run_once()
                self._round_backoff.reset()
                if self._round_full:
                    continue
                await self._maintain()
            except Exception as error:  # the database, mostly: the mail waits in it
                delay = self._round_backoff.next_delay()
                logger.warning(
                    "mail sender round failed; retrying",
                    extra={"error": repr(error), "retry_in_s": round(delay, 2)},
                )
                await asyncio.sleep(delay)
                continue
            await self._idle()


def describe(error: Exception) -> str:
    """``error`` in one line of at most ``ERROR_LENGTH`` characters, for ``last_error``."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text[:ERROR_LENGTH]


def mail_readings(sender: MailSender) -> list[Reading]:
    """The sender as metrics: its lag, what it sent, failed and gave up, its state."""
    stats = sender.stats
    return [
        Reading(
            "mail_oldest_unsent_age_seconds",
            "Age of the oldest mail waiting to be sent (0: none waiting).",
            lambda: stats.oldest_unsent_age_s,
        ),
        Reading("mail_sent", "Mails the SMTP server accepted.", lambda: stats.sent, "counter"),
        Reading(
            "mail_send_failures",
            "Attempts to send a mail that failed (each retried later, or given up).",
            lambda: stats.failures,
            "counter",
        ),
        Reading(
            "mail_given_up",
            "Mails no longer tried (attempts exhausted, or refused for good by the server).",
            lambda: stats.given_up,
            "counter",
        ),
        Reading(
            "mail_smtp_up",
            "1 when the sender's last attempt reached the SMTP server.",
            lambda: int(sender.healthy),
        ),
    ]
