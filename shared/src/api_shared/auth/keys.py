"""Where the keys that verify access tokens come from: users-service's JWKS, fetched and kept
fresh (``JwksKeySource``), or keys known up front (``StaticKeySource``).

Only Ed25519 keys are taken (tokens are EdDSA, ``ALGORITHM``). A key withdrawn from the JWKS
stops being trusted at the next refresh, at most ``DEFAULT_REFRESH_INTERVAL_S`` later; the
verifier asks ``still_trusts`` before it believes a cached verdict (api_shared.auth.verifier).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import aiohttp
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from api_shared.http import FAILURES, HttpSession

logger = logging.getLogger(__name__)

ALGORITHM = "EdDSA"
DEFAULT_REFRESH_INTERVAL_S = 300.0  # a withdrawn key is trusted at most this long
RETRY_TIMER_AFTER_FAILURE_S = 5.0
JWKS_TIMEOUT_S = 3.0  # one fetch of the JWKS, whatever the session's own timeout


class KeySource(Protocol):
    """Where verification keys come from, by ``kid``."""

    async def get(self, kid: str) -> Ed25519PublicKey | None: ...

    def still_trusts(self, kid: str) -> bool:
        """Whether ``kid`` is published and known to be current: checked, without I/O, by
        every cached verification (False sends the verifier back to ``get``)."""
        ...


def public_keys_from_jwks(jwks: Any) -> dict[str, Ed25519PublicKey]:
    """The Ed25519 keys of a JWKS document, by ``kid``; other key types are ignored.

    ValueError when ``jwks`` is not a JWKS document at all (not an object with a ``keys``
    array): a wrong URL or a proxy's error page must not be mistaken for "no keys".
    """
    entries = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError("not a JWKS document")
    keys: dict[str, Ed25519PublicKey] = {}
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or entry.get("kty") != "OKP"
            or entry.get("crv") != "Ed25519"
        ):
            continue
        kid = entry.get("kid")
        try:
            key = jwt.PyJWK(entry, algorithm=ALGORITHM).key
        except jwt.PyJWTError:
            logger.warning("skipping an unusable key in the JWKS", extra={"kid": kid})
            continue
        if isinstance(kid, str) and isinstance(key, Ed25519PublicKey):
            keys[kid] = key
    return keys


class StaticKeySource:
    """Keys known up front: users-service's own, or tests'."""

    def __init__(self, keys: Mapping[str, Ed25519PublicKey]) -> None:
        self._keys = dict(keys)

    async def get(self, kid: str) -> Ed25519PublicKey | None:
        return self._keys.get(kid)

    def still_trusts(self, kid: str) -> bool:
        return kid in self._keys


class JwksKeySource:
    """Keys fetched from a JWKS URL: when an unknown ``kid`` appears, and on a timer.

    Refreshes for unknown ``kid``s happen at most once per ``min_refresh_s`` after a
    successful fetch, so a flood of tokens with made-up ``kid``s cannot turn into a flood of
    requests to users-service. After a failed fetch (users-service starting or restarting)
    the next attempt may come after ``retry_after_failure_s``: verification recovers as soon
    as the JWKS is back. Every ``refresh_interval_s`` the JWKS is fetched again anyway, so a
    key withdrawn from it stops being trusted: by ``keep_fresh()`` running as a background
    task, and by the first lookup after the interval for a process that runs none. A failed
    timed fetch keeps the keys it had (an outage of users-service must not refuse every
    token) and is retried ``RETRY_TIMER_AFTER_FAILURE_S`` later, trusting them meanwhile.

    Fetched through the process's one HTTP session (``api_shared.http.HttpSession``), open
    before the first fetch (see ``jwks_verifier``), each fetch within ``timeout_s``.
    """

    def __init__(
        self,
        url: str,
        http: HttpSession,
        *,
        refresh_interval_s: float = DEFAULT_REFRESH_INTERVAL_S,
        min_refresh_s: float = 5.0,
        retry_after_failure_s: float = 0.5,
        timeout_s: float = JWKS_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < refresh_interval_s <= DEFAULT_REFRESH_INTERVAL_S:
            raise ValueError(
                f"the JWKS refresh interval must be in (0, {DEFAULT_REFRESH_INTERVAL_S:g}] seconds"
            )
        self.url = url
        self.http = http
        self.refresh_interval_s = refresh_interval_s
        self.min_refresh_s = min_refresh_s
        self.retry_after_failure_s = retry_after_failure_s
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.clock = clock
        self._keys: dict[str, Ed25519PublicKey] = {}
        self._next_fetch = float("-inf")  # before this, an unknown kid fetches nothing
        self._stale_at = float("-inf")  # from this on, the keys are fetched again
        self._lock = asyncio.Lock()

    async def get(self, kid: str) -> Ed25519PublicKey | None:
        now = self.clock()
        if now >= self._stale_at and now >= self._next_fetch and not self._lock.locked():
            await self.refresh()
        key = self._keys.get(kid)
        # A fetch in flight (the one at start-up, say) is waited for, not ignored: the token
        # may well be signed by a key it is about to bring.
        if key is None and (self._lock.locked() or self.clock() >= self._next_fetch):
            await self.refresh()
            key = self._keys.get(kid)
        return key

    def still_trusts(self, kid: str) -> bool:
        # Past the refresh time nothing is current: cached verdicts go back through ``get``,
        # whose first call fetches the JWKS again.
        return kid in self._keys and self.clock() < self._stale_at

    async def keep_fresh(self) -> None:
        """Fetch the JWKS now, then every ``refresh_interval_s`` (run it as a task).

        Each fetch comes a little before the keys go stale, so that cached verdicts never
        have to wait for one.
        """
        early = self.refresh_interval_s * 0.1
        while True:
            await self.refresh()
            next_refresh = self._stale_at - early
            if next_refresh <= self.clock():
                # The fetch failed: try again, but unhurried (a request bringing an unknown
                # kid still fetches at once, after retry_after_failure_s).
                next_refresh = self.clock() + min(
                    self.refresh_interval_s, RETRY_TIMER_AFTER_FAILURE_S
                )
            await asyncio.sleep(max(next_refresh, self._next_fetch) - self.clock())

    async def refresh(self) -> None:
        """Fetch the JWKS now (at most one fetch in flight); keep the old keys on failure."""
        async with self._lock:
            if self.clock() < self._next_fetch:
                return  # another task fetched while this one waited
            self._next_fetch = self.clock() + self.retry_after_failure_s
            try:
                async with self.http.session.get(
                    self.url, timeout=self.timeout, headers={"Accept": "application/json"}
                ) as response:
                    response.raise_for_status()
                    # Whatever its content type: the document itself is checked.
                    keys = public_keys_from_jwks(await response.json(content_type=None))
            except FAILURES as error:
                logger.warning(
                    "could not fetch the JWKS", extra={"url": self.url, "error": repr(error)}
                )
                # Keep trusting the keys already known a little longer, rather than making
                # every request wait on a users-service that does not answer.
                retry_at = self.clock() + min(self.refresh_interval_s, RETRY_TIMER_AFTER_FAILURE_S)
                self._stale_at = max(self._stale_at, retry_at)
                return
            withdrawn = sorted(self._keys.keys() - keys.keys())
            if withdrawn:
                logger.info("keys withdrawn from the JWKS", extra={"kids": withdrawn})
            self._keys = keys
            self._next_fetch = self.clock() + self.min_refresh_s
            self._stale_at = self.clock() + self.refresh_interval_s
