"""A service's calls to other services: one aiohttp session per process, and the replicas of
one upstream taken in turn.

Every call has the session's short total timeout, so a slow upstream costs a request at most
that; every call carries the ``X-Request-ID`` of the request it is made for (and, with
tracing on, its ``traceparent``: api_shared.tracing instruments the session).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aiohttp

from api_shared.errors import UnavailableError
from api_shared.request_id import forwarded_headers

logger = logging.getLogger(__name__)

# Unreachable (refused, DNS, reset), too slow, or not JSON.
FAILURES: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError, ValueError)


class HttpSession:
    """The process's one aiohttp session, a resource: started with the server, stopped with it."""

    def __init__(self, *, timeout_s: float) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self.timeout)

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the HTTP session is not open (is the server started?)")
        return self._session


@dataclass(frozen=True, slots=True)
class Answer:
    """An upstream's answer: its status and its body."""

    status: int
    body: bytes


class Replicas:
    """The replicas of one upstream (``http://a:8001``, …), taken in turn.

    A replica that refuses the connection never saw the request, so the next one is asked;
    when every replica refuses, or one fails otherwise (times out, resets), the upstream is
    unavailable: ``UnavailableError`` with ``message``, the reason logged.
    """

    def __init__(
        self, http: HttpSession, base_urls: Sequence[str], *, name: str, message: str
    ) -> None:
        if not base_urls:
            raise ValueError(f"at least one {name} URL is needed")
        self.http = http
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.name, self.message = name, message
        self._turn = itertools.count()

    async def get(self, path: str, headers: Mapping[str, str]) -> Answer:
        """``GET path`` from the next replica that takes the connection."""
        first = next(self._turn)
        sent = {"Accept": "application/json", **headers, **forwarded_headers()}
        for attempt in range(len(self.base_urls)):
            base_url = self.base_urls[(first + attempt) % len(self.base_urls)]
            try:
                async with self.http.session.get(base_url + path, headers=sent) as response:
                    return Answer(response.status, await response.read())
            except aiohttp.ClientConnectorError as error:
                logger.warning(f"{self.name} replica refused", extra={"error": repr(error)})
            except FAILURES as error:
                raise self.unavailable(repr(error)) from error
        raise self.unavailable("every replica refused the connection")

    def unavailable(self, reason: str) -> UnavailableError:
        """The upstream cannot answer (logged with ``reason``)."""
        logger.warning("upstream unavailable", extra={"upstream": self.name, "reason": reason})
        return UnavailableError(self.message)
