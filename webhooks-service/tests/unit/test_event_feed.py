"""The event feed's rules without a database: each event offered once, in order, to the
subscriptions that want it; a subscription taken mid-read gets that read's events; the caps
(per account, per client address, per process);
a client too slow loses its subscription rather than growing its buffer."""

from __future__ import annotations

import asyncio
import contextlib
from types import SimpleNamespace
from typing import Any, cast

import pytest

from api_shared.errors import RateLimitedError, UnavailableError
from webhooks_service.event_log.feed import EventFeed, Subscription
from webhooks_service.models import LoggedEvent


def _logged(position: int, user_id: str | None, event_type: str = "t") -> LoggedEvent:
    return cast(
        LoggedEvent,
        SimpleNamespace(
            position=position, user_id=user_id, type=event_type, event_id=f"e{position}"
        ),
    )


class FakeLog:
    """The log as a list; ``after`` can be held mid-read to take a subscription then."""

    def __init__(self, events: list[LoggedEvent]) -> None:
        self.events = events
        self.hold: asyncio.Event | None = None

    async def newest_position(self) -> int:
        return max((event.position for event in self.events), default=0)

    async def after(self, position: int, **_: Any) -> list[LoggedEvent]:
        if self.hold is not None:
            await self.hold.wait()
        return [event for event in self.events if event.position > position]


def _feed(log: FakeLog, **limits: int) -> EventFeed:
    options = {"max_streams": 10, "max_per_caller": 3, "max_per_address": 6, "buffer": 10}
    options |= limits
    return EventFeed(log, idle_s=60.0, listening_idle_s=60.0, **options)


async def test_each_event_is_offered_once_in_order_to_the_subscriptions_that_want_it() -> None:
    log = FakeLog([])
    feed = _feed(log)
    feed._started.set()
    async with (
        feed.subscription("user:a", "a", None) as mine,
        feed.subscription("user:x", None, "t2") as admins,
    ):
        log.events += [_logged(1, "a"), _logged(2, "b", "t2"), _logged(3, "a", "t2")]
        await feed._read_once()
        await feed._read_once()  # nothing new: nothing offered twice
        assert [event.position for event in mine.take()] == [1, 3]
        assert [event.position for event in admins.take()] == [2, 3]
    assert feed.open_streams == 0


async def test_a_subscription_taken_during_a_read_gets_what_that_read_finds() -> None:
    log = FakeLog([_logged(1, "a")])
    feed = _feed(log)
    feed._started.set()
    log.hold = asyncio.Event()
    reading = asyncio.create_task(feed._read_once())
    await asyncio.sleep(0)
    async with feed.subscription("user:a", "a", None) as late:
        assert late.position == 0  # where the feed stood: everything after is its
        log.hold.set()
        await reading
        assert [event.position for event in late.take()] == [1]
    assert feed.position == 1


async def test_the_caps_per_caller_and_per_process() -> None:
    feed = _feed(FakeLog([]), max_streams=3, max_per_caller=2)
    feed._started.set()
    async with feed.subscription("user:a", "a", None), feed.subscription("user:a", "a", None):
        with pytest.raises(RateLimitedError):
            async with feed.subscription("user:a", "a", None):
                pass
        async with feed.subscription("user:b", "b", None):
            with pytest.raises(UnavailableError):
                async with feed.subscription("user:c", "c", None):
                    pass


async def test_one_address_holds_at_most_its_cap_and_the_next_address_is_served() -> None:
    feed = _feed(FakeLog([]), max_streams=5, max_per_caller=2, max_per_address=3)
    feed._started.set()
    async with contextlib.AsyncExitStack() as held:
        for account in ("user:a", "user:a", "user:b"):
            await held.enter_async_context(feed.subscription(account, None, None, "192.0.2.1"))
        with pytest.raises(RateLimitedError, match="per client address"):
            async with feed.subscription("user:c", "c", None, "192.0.2.1"):
                pass
        with pytest.raises(RateLimitedError, match="per account"):
            async with feed.subscription("user:a", "a", None, "198.51.100.7"):
                pass  # the account's cap holds from any address
        async with feed.subscription("user:d", "d", None, "198.51.100.7"):
            assert feed.open_streams == 4
    async with feed.subscription("user:c", "c", None, "192.0.2.1"):
        pass  # the address's streams ended: it may open again
    assert (feed._per_caller, feed._per_address) == ({}, {})


async def test_a_subscription_past_its_buffer_ends_and_holds_nothing() -> None:
    subscription = Subscription("user:a", "a", None, buffer=2)
    for position in (1, 2, 3):
        subscription.offer(_logged(position, "a"))
    assert subscription.ended == "overflowed"
    assert subscription.take() == []
    subscription.offer(_logged(4, "a"))  # nothing more is held once it ended
    assert subscription.take() == []


async def test_ending_every_subscription_wakes_their_streams() -> None:
    feed = _feed(FakeLog([]))
    feed._started.set()
    async with feed.subscription("user:a", "a", None) as waiting:
        waiter = asyncio.create_task(waiting.wait(60.0))
        await asyncio.sleep(0)
        feed.end_all("shutdown")
        await asyncio.wait_for(waiter, 5.0)
        assert waiting.ended == "shutdown"


async def test_a_claimed_account_loses_its_streams_before_the_claim_is_offered() -> None:
    # users.user.claimed: the owner of the account's address took it back. Whoever held it
    # opened these streams (with a token, or a key: both count as the account's); they end,
    # are not offered the claim nor anything after it. Another account's stream goes on.
    def claimed(position: int, subject: str) -> LoggedEvent:
        return cast(
            LoggedEvent,
            SimpleNamespace(
                position=position,
                user_id=subject,
                subject=subject,
                type="users.user.claimed",
                event_id=f"e{position}",
            ),
        )

    log = FakeLog([])
    feed = _feed(log)
    feed._started.set()
    async with (
        feed.subscription("user:a", "a", None) as token_stream,
        feed.subscription("user:a", "a", None) as key_stream,
        feed.subscription("user:b", "b", None) as others,
        feed.subscription("user:admin", None, None) as admins,
    ):
        log.events += [_logged(1, "a"), claimed(2, "a"), _logged(3, "a")]
        await feed._read_once()
        for ended in (token_stream, key_stream):
            assert ended.ended == "account claimed"
            assert [event.position for event in ended.take()] == [1]
        assert others.ended is None
        assert admins.ended is None
        assert [event.position for event in admins.take()] == [1, 2, 3]
