"""Events out: the delivery loop POSTs due deliveries, signed, and records every attempt.

Each round claims up to ``concurrency`` due deliveries (``DeliveryRepository.claim_due``:
several dispatchers share the work, and one resource's events go out in order), POSTs them
at once, and records each attempt. A 2xx answer delivers; anything else (another status, a
redirect, a timeout, a refused connection or address) schedules the next attempt by the
backoff, or marks the delivery failed after the last one.

Each attempt is checked against the SSRF rules again, on the addresses the connection then
uses (``GuardedResolver``): a host may resolve elsewhere than at registration. It is signed
with the endpoint's secret, and with the one its last rotation replaced while that one's
grace period lasts (``secret_box.signing_secrets``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from uuid import UUID

import aiohttp

from api_shared.frame import ReadinessCheck
from webhooks_service.addresses import GuardedResolver, UnsafeUrlError, UrlGuard
from webhooks_service.backoff import next_delay
from webhooks_service.clock import Clock
from webhooks_service.delivery.ports import DeliveryStore, Outcome
from webhooks_service.models import Delivery, DeliveryStatus, Endpoint
from webhooks_service.secret_box import SealedSecretError, SecretBox, signing_secrets
from webhooks_service.signing import signed_headers

logger = logging.getLogger(__name__)

LEASE_MARGIN_S = 30.0
MAX_ERROR_LENGTH = 500
USER_AGENT = "api-platform-webhooks/1"


class Deliverer:
    """The delivery loop and its HTTP session (a context Resource)."""

    def __init__(
        self,
        deliveries: DeliveryStore,
        guard: UrlGuard,
        box: SecretBox,
        clock: Clock,
        *,
        timeout_s: float,
        retry_delays_s: Sequence[float],
        poll_interval_s: float,
        concurrency: int,
        on_attempt: Callable[[str], None] = lambda outcome: None,
        wait_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.deliveries, self.guard, self.clock = deliveries, guard, clock
        self.box = box  # opens the endpoints' sealed secrets
        self.timeout_s = timeout_s
        self.retry_delays_s = tuple(retry_delays_s)
        self.poll_interval_s = poll_interval_s
        self.concurrency = concurrency
        self.on_attempt = on_attempt
        self.wait_ready = wait_ready  # the schema at its latest migration, say
        # A claim outlives the attempt: a dispatcher that dies mid-attempt frees it then.
        self.lease = timedelta(seconds=timeout_s + LEASE_MARGIN_S)
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._poked = asyncio.Event()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def check(self) -> None:
        """A readiness check: raises unless the loop runs."""
        if not self.running:
            raise RuntimeError("the delivery loop is not running")

    def readiness_checks(self) -> Mapping[str, ReadinessCheck]:
        return {"deliveries": self.check}

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(resolver=GuardedResolver(self.guard)),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            headers={"User-Agent": USER_AGENT},
        )
        self._task = asyncio.create_task(self._run_forever(), name="webhook-deliveries")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def poke(self) -> None:
        """New deliveries were written: look for due ones now, not at the next poll."""
        self._poked.set()

    async def run_once(self) -> int:
        """Claim the due deliveries and attempt them; how many were attempted."""
        claimed = await self.deliveries.claim_due(
            now=self.clock(), lease=self.lease, limit=self.concurrency
        )
        results = await asyncio.gather(
            *(self._deliver(d, e, claim) for d, e, claim in claimed), return_exceptions=True
        )
        for result in results:
            # Recording failed (the database, say): the claim's lease frees the delivery.
            if isinstance(result, Exception):
                logger.warning("could not record a webhook attempt", exc_info=result)
        return len(claimed)

    async def _run_forever(self) -> None:
        if self.wait_ready is not None:
            await self.wait_ready()
        while True:
            self._poked.clear()  # a poke from here on wakes the wait below
            try:
                attempted = await self.run_once()
            except Exception:
                logger.warning("delivery round failed", exc_info=True)
                attempted = 0
            if not attempted:
                # The poll finds retries coming due and other dispatchers' deliveries; a poke
                # (this process's intake wrote some) ends the wait at once.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._poked.wait(), self.poll_interval_s)

    async def _deliver(self, delivery: Delivery, endpoint: Endpoint, claim: UUID) -> None:
        outcome = await self.attempt(delivery, endpoint)
        failures = 0 if outcome.succeeded else delivery.failures + 1
        delay = None if outcome.succeeded else next_delay(self.retry_delays_s, failures)
        if outcome.succeeded:
            status, due, label = DeliveryStatus.DELIVERED, None, "delivered"
        elif delay is None:
            status, due, label = DeliveryStatus.FAILED, None, "failed"
        else:
            status, label = DeliveryStatus.PENDING, "retry"
            due = outcome.attempted_at + timedelta(seconds=delay)
        recorded = await self.deliveries.record(
            delivery,
            claim,
            outcome,
            status=status,
            next_attempt_at=due,
            failures=failures,
            now=self.clock(),
        )
        if recorded:
            self.on_attempt(label)
        logger.info(
            "webhook attempt",
            extra={
                "delivery": str(delivery.id),
                "event": delivery.event_id,
                "status_code": outcome.status_code,
                "error": outcome.error,
                "outcome": label if recorded else "claim lost",
            },
        )

    async def attempt(self, delivery: Delivery, endpoint: Endpoint) -> Outcome:
        """POST the delivery's event to the endpoint once, signed; what came of it."""
        started_at, started = self.clock(), time.perf_counter()
        status_code: int | None = None
        error: str | None = None
        try:
            self.guard.check_target(endpoint.url)
            status_code = await self._post(delivery, endpoint)
        except UnsafeUrlError as refused:
            error = f"refused: the URL {refused}"
        except SealedSecretError:
            # The operator's to fix (a key dropped from the file too soon); retried meanwhile.
            logger.error("cannot open a webhook secret", extra={"endpoint": str(endpoint.id)})
            error = "the endpoint's secret cannot be opened with WEBHOOK_SECRETS_KEY_FILE's keys"
        except TimeoutError:
            error = f"timeout: no answer within {self.timeout_s:g} s"
        except (aiohttp.ClientError, ValueError) as failure:
            error = f"{type(failure).__name__}: {failure}"
        return Outcome(
            attempted_at=started_at,
            status_code=status_code,
            error=error[:MAX_ERROR_LENGTH] if error else None,
            duration_ms=round((time.perf_counter() - started) * 1000),
        )

    async def _post(self, delivery: Delivery, endpoint: Endpoint) -> int:
        assert self._session is not None, "start() opens the session"
        body = delivery.payload.encode()
        secrets = signing_secrets(endpoint, self.box, self.clock())
        headers = signed_headers(secrets, delivery.event_id, int(time.time()), body)
        async with self._session.post(
            endpoint.url,
            data=body,
            headers={**headers, "Content-Type": "application/json"},
            # A redirect could lead anywhere, a private address included: it is a failure.
            allow_redirects=False,
        ) as response:
            return response.status
