"""Token-bucket rate limits, in memory or shared through Redis (docs/api.md#limits).

The gateway limits by route and address; users-service by what only it knows (the account a
login names, whose current password is being guessed, which session a refresh token is of).
Both use these buckets, so both share one Redis when REDIS_URL is set.

A bucket holds up to ``burst`` tokens and refills at ``rate`` per second; each request
takes one. With Redis, every gateway replica draws from the same buckets (one atomic Lua
script per request, timed by Redis's own clock). If Redis fails, each replica falls back to
its own in-memory buckets until Redis answers again: limits loosen (one budget per replica
instead of one in all) but never switch off, so a Redis outage cannot open the login limits.

``give_back`` returns a token taken earlier: the login-account buckets are charged only by
failed logins, so a login's token goes back once the password was right.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

from api_shared.errors import RateLimitedError

if TYPE_CHECKING:
    # The redis package costs a process about 20 MB: it is imported only when REDIS_URL is
    # set (in RedisBuckets and redis_client), never by a gateway keeping buckets in memory.
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Policy:
    """``burst`` requests at once, refilled at ``rate`` per second."""

    name: str
    rate: float
    burst: int

    @property
    def window_s(self) -> int:
        """Seconds for an empty bucket to fill again."""
        return math.ceil(self.burst / self.rate)


class Decision(NamedTuple):
    """What taking a token decided (a tuple: made on every request, twice)."""

    allowed: bool
    remaining: int
    retry_after_s: int  # until one token is back (meaningful when refused)
    reset_s: int  # until the bucket is full again

    def headers(self, policy: Policy) -> dict[str, str]:
        """The IETF draft ``RateLimit-Policy`` and ``RateLimit`` fields."""
        return {
            "RateLimit-Policy": _policy_field(policy),
            "RateLimit": f'"{policy.name}";r={self.remaining};t={self.reset_s}',
        }


def per_minute(name: str, count: int) -> Policy:
    """``count`` requests at once, refilled evenly over the minute."""
    return Policy(name, count / 60, count)


@functools.lru_cache(maxsize=64)  # a process has a few policies, fixed at start
def _policy_field(policy: Policy) -> str:
    return f'"{policy.name}";q={policy.burst};w={policy.window_s}'


def decide(tokens: float, policy: Policy) -> Decision:
    """The decision once ``tokens`` (after refill, before this request) are known."""
    allowed = tokens >= 1
    left = tokens - 1 if allowed else tokens
    return Decision(
        allowed,
        max(int(left), 0),  # remaining
        0 if allowed else max(1, math.ceil((1 - left) / policy.rate)),  # retry_after_s
        math.ceil((policy.burst - left) / policy.rate),  # reset_s
    )


class Buckets(Protocol):
    async def take(self, key: str, policy: Policy) -> Decision: ...

    async def give_back(self, key: str, policy: Policy) -> None: ...


class MemoryBuckets:
    """Buckets in this process's memory, bounded: idle buckets are forgotten first."""

    def __init__(self, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic):
        self.max_keys = max_keys
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    async def take(self, key: str, policy: Policy) -> Decision:
        now = self.clock()
        tokens, updated = self._buckets.pop(key, (float(policy.burst), now))
        tokens = min(float(policy.burst), tokens + (now - updated) * policy.rate)
        decision = decide(tokens, policy)
        self._buckets[key] = (tokens - 1 if decision.allowed else tokens, now)
        if len(self._buckets) > self.max_keys:
            # The least recently used bucket is the fullest one; forgetting it is harmless.
            self._buckets.popitem(last=False)
        return decision

    async def give_back(self, key: str, policy: Policy) -> None:
        state = self._buckets.get(key)
        if state is not None:
            self._buckets[key] = (min(float(policy.burst), state[0] + 1), state[1])


# KEYS[1] bucket; ARGV rate, burst, cost (1: take one if there is one; -1: give one back).
# Returns {tokens before this request (string)}.
_TAKE_SCRIPT = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local left = tokens
if cost < 0 then left = math.min(burst, tokens - cost)
elseif tokens >= cost then left = tokens - cost end
redis.call('HSET', KEYS[1], 'tokens', tostring(left), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(tokens)
"""


class RedisBuckets:
    """Buckets in Redis, shared by every gateway replica; in memory while Redis fails.

    A Resource (api_shared.context): its Redis client is closed when the server stops.
    """

    PAUSE_AFTER_FAILURE_S = 1.0  # skip Redis briefly after an error, so requests stay fast

    def __init__(
        self,
        redis: Redis,
        on_error: Callable[[], None] = lambda: None,
        fallback: Buckets | None = None,
    ) -> None:
        from redis.exceptions import RedisError

        self._failures: tuple[type[BaseException], ...] = (
            RedisError,
            OSError,
            TimeoutError,
            ValueError,
        )
        self.redis = redis
        self.on_error = on_error
        self.fallback = fallback or MemoryBuckets()
        self._script = redis.register_script(_TAKE_SCRIPT)
        self._paused_until = 0.0

    async def start(self) -> None:
        """Nothing to open: the client connects on its first command."""

    async def stop(self) -> None:
        await self.redis.aclose()

    async def take(self, key: str, policy: Policy) -> Decision:
        tokens = await self._run(key, policy, cost=1)
        if tokens is None:
            return await self.fallback.take(key, policy)
        return decide(tokens, policy)

    async def give_back(self, key: str, policy: Policy) -> None:
        if await self._run(key, policy, cost=-1) is None:
            await self.fallback.give_back(key, policy)

    async def _run(self, key: str, policy: Policy, cost: int) -> float | None:
        """The bucket's tokens before this change, or None when Redis cannot say."""
        if time.monotonic() < self._paused_until:
            return None
        try:
            return float(
                await self._script(
                    keys=[f"ratelimit:{key}"], args=[policy.rate, policy.burst, cost]
                )
            )
        except self._failures as error:
            self._paused_until = time.monotonic() + self.PAUSE_AFTER_FAILURE_S
            self.on_error()
            logger.warning(
                "rate limiter's Redis unavailable, limiting with this process's own buckets",
                extra={"error": repr(error)},
            )
            return None


def shared_buckets(
    redis_url: str | None, on_error: Callable[[], None] = lambda: None
) -> RedisBuckets | None:
    """Buckets in Redis when ``redis_url`` is set (this process's own while it fails, never
    none), else None: the caller keeps ``MemoryBuckets``. A Resource, to close with the app."""
    if not redis_url:
        return None
    return RedisBuckets(redis_client(redis_url), on_error=on_error, fallback=MemoryBuckets())


def redis_client(url: str) -> Redis:
    from redis.asyncio import Redis

    # Short timeouts: a slow Redis must cost each request milliseconds, not seconds.
    return Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)


class Limiter:
    """Takes tokens from ``buckets`` and refuses with RATE_LIMITED (429, ``Retry-After`` and
    the limit headers) when one is empty; ``on_refused`` sees the policy's name (a metric)."""

    def __init__(
        self, buckets: Buckets, on_refused: Callable[[str], None] = lambda policy: None
    ) -> None:
        self.buckets = buckets
        self.on_refused = on_refused

    async def take(self, policy: Policy, key: str) -> Decision:
        """A token from ``key``'s bucket, or RateLimitedError."""
        decision = await self.buckets.take(key, policy)
        if not decision.allowed:
            self.on_refused(policy.name)
            raise RateLimitedError(decision.retry_after_s, headers=decision.headers(policy))
        return decision

    async def take_all(self, charges: list[tuple[Policy, str]]) -> None:
        """A token from every bucket, or none: those taken go back when one refuses."""
        for done, (policy, key) in enumerate(charges):
            try:
                await self.take(policy, key)
            except RateLimitedError:
                await self.give_back(charges[:done])
                raise

    async def give_back(self, charges: list[tuple[Policy, str]]) -> None:
        for policy, key in charges:
            await self.buckets.give_back(key, policy)


IPV6_SUBSCRIBER_PREFIX = 64  # one subscriber's allocation: a caller rotates freely inside it
IPV6_SITE_PREFIX = 48  # a site's: where a new account or a password guess costs an attacker


# Parsing an address costs microseconds on every request; the clients of a moment are few.
@functools.lru_cache(maxsize=4096)
def address_key(address: str, ipv6_prefix: int = IPV6_SUBSCRIBER_PREFIX) -> str:
    """The part of an address that names one caller in rate-limit keys.

    IPv4: the address. IPv6: its ``/ipv6_prefix`` (a /64 by default, which one subscriber
    holds whole, so an address per request costs it nothing; a /48 for the budgets of
    logins and sign-ups, where a site's worth of /64s is cheap to an attacker). An
    IPv4-mapped IPv6 address is its IPv4 address. Anything that is not an address (a test
    client's name, say) is kept as it is.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, ipv6_prefix), strict=False))
    return str(ip)
