"""The response micro-cache: expiry, memory bound, one execution per key at a time."""

from __future__ import annotations

import asyncio

from books_graphql.http.answer import Answer, Caching
from books_graphql.http.response_cache import ResponseCache, cache_key


def replayable(body: bytes) -> Answer:
    return Answer(body, 200, Caching.REPLAYABLE)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_is_replayed_until_it_expires() -> None:
    clock = Clock()
    cache = ResponseCache(ttl_s=1.0, max_bytes=10_000, clock=clock)
    key = cache_key("{ books { id } }", None, None)

    stored = replayable(b'{"data":{}}')
    cache.put(key, stored)
    clock.now += 0.99
    fresh = cache.get(key)
    clock.now += 0.02
    expired = cache.get(key)

    assert fresh is stored
    assert expired is None
    assert len(cache) == 0


def test_variables_are_part_of_the_key_whatever_their_order() -> None:
    query = "query($a: ID, $b: ID) { book(id: $a) { id } }"

    assert cache_key(query, None, {"a": "1", "b": "2"}) == cache_key(
        query, None, {"b": "2", "a": "1"}
    )
    assert cache_key(query, None, {"a": "1"}) != cache_key(query, None, {"a": "2"})
    assert cache_key(query, "A", None) != cache_key(query, "B", None)
    assert cache_key(query, None, {}) == cache_key(query, None, None)


def test_the_least_recently_used_answers_leave_when_the_budget_is_full() -> None:
    cache = ResponseCache(ttl_s=10, max_bytes=300)
    keys = [cache_key(f"{{ q{i} }}", None, None) for i in range(5)]  # 6 bytes of query each
    for key in keys[:4]:
        cache.put(key, replayable(b"x" * 68))  # 74 bytes an entry: four fit in 300
    cache.get(keys[0])  # now the most recently used

    cache.put(keys[4], replayable(b"x" * 68))

    assert cache.get(keys[1]) is None
    assert all(cache.get(k) is not None for k in (keys[0], keys[2], keys[3], keys[4]))
    assert cache.stored_bytes == 4 * 74


def test_an_answer_above_a_quarter_of_the_budget_is_not_stored() -> None:
    cache = ResponseCache(ttl_s=10, max_bytes=400)
    key = cache_key("{ books { id } }", None, None)

    cache.put(key, replayable(b"x" * 200))

    assert cache.get(key) is None
    assert cache.stored_bytes == 0


async def test_concurrent_misses_share_one_execution() -> None:
    cache = ResponseCache(ttl_s=10, max_bytes=10_000)
    key = cache_key("{ books { id } }", None, None)
    runs = 0

    async def execute() -> Answer:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.01)
        return replayable(b'{"data":{}}')

    answers = await asyncio.gather(*(cache.fetch(key, execute) for _ in range(20)))

    assert runs == 1
    assert answers == [replayable(b'{"data":{}}')] * 20
    assert all(shared is answers[0] for shared in answers)  # one answer, not 20 copies


async def test_answers_with_errors_are_neither_stored_nor_shared() -> None:
    cache = ResponseCache(ttl_s=10, max_bytes=10_000)
    key = cache_key("{ books { id } }", None, None)
    runs = 0

    async def execute() -> Answer:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.01)
        return Answer(b'{"errors":[]}', 400, Caching.NOT_REPLAYABLE)

    answers = await asyncio.gather(*(cache.fetch(key, execute) for _ in range(3)))

    assert runs == 3  # each waiter ran its own after the first answer proved unshareable
    assert answers == [Answer(b'{"errors":[]}', 400, Caching.NOT_REPLAYABLE)] * 3
    assert cache.get(key) is None


async def test_a_failing_execution_lets_the_waiters_run_their_own() -> None:
    cache = ResponseCache(ttl_s=10, max_bytes=10_000)
    key = cache_key("{ books { id } }", None, None)
    calls = 0

    async def execute() -> Answer:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        if calls == 1:
            raise ConnectionError("down")
        return replayable(b'{"data":{}}')

    first, second = await asyncio.gather(
        cache.fetch(key, execute), cache.fetch(key, execute), return_exceptions=True
    )

    assert isinstance(first, ConnectionError)
    assert second == replayable(b'{"data":{}}')
    # Nothing left running (the running executions are keyed by the key and a version).
    assert key not in {running_key for running_key, _version in cache._running}
