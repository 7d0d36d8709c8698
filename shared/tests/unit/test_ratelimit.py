"""Token buckets: bursts pass, the sustained rate refills, refusals say when to retry."""

from __future__ import annotations

import os
import subprocess
import sys

from api_shared.ratelimit import MemoryBuckets, Policy, decide

POLICY = Policy("default", rate=2.0, burst=3)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_full_bucket_lets_a_burst_through_then_refuses() -> None:
    buckets = MemoryBuckets(clock=Clock())

    decisions = [await buckets.take("k", POLICY) for _ in range(4)]

    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert decisions[-1].retry_after_s == 1


async def test_the_bucket_refills_at_the_sustained_rate() -> None:
    clock = Clock()
    buckets = MemoryBuckets(clock=clock)
    for _ in range(3):
        await buckets.take("k", POLICY)

    clock.now += 0.5  # one token at 2 per second
    assert (await buckets.take("k", POLICY)).allowed
    assert not (await buckets.take("k", POLICY)).allowed


async def test_callers_have_separate_buckets() -> None:
    buckets = MemoryBuckets(clock=Clock())
    for _ in range(3):
        await buckets.take("a", POLICY)

    assert (await buckets.take("b", POLICY)).allowed


async def test_the_store_forgets_the_least_recently_used_bucket_beyond_its_bound() -> None:
    buckets = MemoryBuckets(max_keys=2, clock=Clock())
    for key in ("a", "b", "c"):
        await buckets.take(key, POLICY)

    assert set(buckets._buckets) == {"b", "c"}


def test_limit_headers_follow_the_ietf_draft_fields() -> None:
    headers = decide(3.0, POLICY).headers(POLICY)

    assert headers["RateLimit-Policy"] == '"default";q=3;w=2'
    assert headers["RateLimit"] == '"default";r=2;t=1'


def test_a_gateway_keeping_its_buckets_in_memory_never_loads_redis() -> None:
    # The redis package alone costs a process about 20 MB (docs/soak.md's limit is 100 MB).
    probe = (
        "import sys\n"
        "from gateway.app import create_app\n"
        "from gateway.settings import Settings\n"
        "create_app(Settings())\n"
        "print('redis' in sys.modules)\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=environment, check=True
    )

    assert result.stdout.strip().splitlines()[-1] == "False"


async def test_a_token_given_back_is_there_for_the_next_request_but_never_beyond_the_burst() -> (
    None
):
    buckets = MemoryBuckets(clock=Clock())
    for _ in range(3):
        await buckets.take("k", POLICY)

    await buckets.give_back("k", POLICY)
    assert (await buckets.take("k", POLICY)).allowed
    assert not (await buckets.take("k", POLICY)).allowed
    for _ in range(5):
        await buckets.give_back("k", POLICY)
    assert [(await buckets.take("k", POLICY)).allowed for _ in range(4)] == [True] * 3 + [False]
