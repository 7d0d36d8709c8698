"""A process's one NATS connection, shared by its relay and consumers.

It connects as the process's own NATS user (``NatsLogin``: its NKey seed signs the server's
nonce) with that user's inbox prefix, the only inbox its permissions let it read
(``access``). Connecting never blocks the service: the first connection is tried in the
background, again and again with backoff (a seed not written yet, a server not up yet), and
once made nats-py reconnects by itself for as long as it takes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext

from api_shared.background import BackgroundTask
from api_shared.events.access import inbox_of
from api_shared.events.credentials import NatsLogin, read_seed

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 2
# A server that vanished without closing the connection (its machine lost) answers no PING:
# after PINGS_UNANSWERED_MAX of them, PING_INTERVAL_S apart, the client moves to another
# server of the cluster. nats-py's defaults (2 minutes apart) would leave events waiting
# in the outbox for minutes.
PING_INTERVAL_S = 5
PINGS_UNANSWERED_MAX = 2
PERMISSIONS_VIOLATION = "permissions violation"
AUTHORIZATION_VIOLATION = "authorization violation"


def server_urls(url: str) -> list[str]:
    """The servers ``NATS_URL`` names, comma-separated (a cluster's: the client connects to
    one and fails over to the others)."""
    return [server.strip() for server in url.split(",") if server.strip()]


class NatsUnavailableError(ConnectionError):
    """NATS is not connected right now; the caller backs off and tries again."""


class Backoff:
    """Exponential delays with full jitter, from ``initial_s`` up to ``maximum_s``."""

    def __init__(self, initial_s: float = 0.2, maximum_s: float = 15.0) -> None:
        self.initial_s, self.maximum_s = initial_s, maximum_s
        self.failures = 0

    def next_delay(self) -> float:
        ceiling = min(self.maximum_s, self.initial_s * 2**self.failures)
        self.failures += 1
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 (jitter, not security)

    def reset(self) -> None:
        self.failures = 0


class NatsLink(BackgroundTask):
    """Connects as ``login`` says in the background; ``jetstream()`` is the context while
    connected."""

    def __init__(self, login: NatsLogin) -> None:
        super().__init__(f"{login.user}-nats", self._connect_until_done)
        self.login = login
        self.url, self.client_name = login.url, login.user
        self._client: Client | None = None
        self._connected = asyncio.Event()
        self._refused = False  # the server refused our credentials since we last connected

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.is_connected

    async def stop(self) -> None:
        await super().stop()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    def jetstream(self) -> JetStreamContext:
        """The JetStream context; raises ``NatsUnavailableError`` while not connected."""
        if self._client is None or not self._client.is_connected:
            raise NatsUnavailableError(f"NATS at {self.url} is not connected")
        return self._client.jetstream()

    async def wait_connected(self) -> None:
        await self._connected.wait()

    async def _connect_until_done(self) -> None:
        backoff = Backoff(maximum_s=10.0)
        while self._client is None:
            try:
                # Read at each attempt: make run's server may not have written it yet.
                seed = read_seed(self.login.seed_file)
                self._client = await nats.connect(
                    server_urls(self.url),
                    name=self.client_name,
                    nkeys_seed_str=seed,
                    inbox_prefix=inbox_of(self.client_name),
                    connect_timeout=CONNECT_TIMEOUT_S,
                    ping_interval=PING_INTERVAL_S,
                    max_outstanding_pings=PINGS_UNANSWERED_MAX,
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=1,
                    error_cb=self._on_error,
                    disconnected_cb=self._on_disconnected,
                    reconnected_cb=self._on_reconnected,
                )
            except Exception as error:
                delay = backoff.next_delay()
                logger.warning(
                    "NATS not reachable; events wait in the outbox",
                    extra={
                        "url": self.url,
                        "user": self.client_name,
                        "error": repr(error),
                        "retry_in_s": round(delay, 2),
                    },
                )
                await asyncio.sleep(delay)
        self._refused = False
        logger.info("NATS connected", extra={"url": self.url, "user": self.client_name})
        self._connected.set()

    async def _on_error(self, error: Exception) -> None:
        text = str(error).lower()
        if PERMISSIONS_VIOLATION in text:
            # The server refused a subject: this user's permissions and its work disagree.
            logger.error(
                "NATS refused a subject to this user",
                extra={"user": self.client_name, "error": str(error)},
            )
        elif AUTHORIZATION_VIOLATION in text and not self._refused:
            # A seed the server does not know (nats-py tries again every second; said once).
            self._refused = True
            logger.error(
                "NATS refused this user's credentials; retrying",
                extra={"url": self.url, "user": self.client_name},
            )
        else:
            logger.debug("NATS connection error", extra={"error": repr(error)})

    async def _on_disconnected(self) -> None:
        logger.warning("NATS disconnected; reconnecting", extra={"url": self.url})

    async def _on_reconnected(self) -> None:
        self._refused = False
        logger.info("NATS reconnected", extra={"url": self.url})
