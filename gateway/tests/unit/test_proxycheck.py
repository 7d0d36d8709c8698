"""The start-up warning for a gateway that sees one private address (TRUSTED_PROXIES unset)."""

from __future__ import annotations

import logging

import pytest

from gateway.proxycheck import SoleAddressWatch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _watch(clock: Clock) -> SoleAddressWatch:
    return SoleAddressWatch(watch_s=60, clock=clock)


def test_a_first_minute_from_one_private_address_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    watch = _watch(clock)
    for _ in range(3):
        watch.observe("10.1.2.3")
    clock.now += 61

    with caplog.at_level(logging.WARNING, "gateway.proxycheck"):
        watch.observe("10.1.2.3")  # the first request after the minute concludes
        watch.observe("10.1.2.3")

    assert [r.getMessage() for r in caplog.records if "TRUSTED_PROXIES" in r.getMessage()]
    assert len(caplog.records) == 1
    assert not watch.watching


@pytest.mark.parametrize(
    "addresses",
    [["10.1.2.3", "10.1.2.4"], ["93.184.216.34"], ["127.0.0.1"], []],
    ids=["two-clients", "public", "loopback", "no-requests"],
)
def test_no_warning_unless_one_private_address_sent_everything(
    addresses: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    watch = _watch(clock)
    for address in addresses:
        watch.observe(address)
    clock.now += 61

    with caplog.at_level(logging.WARNING, "gateway.proxycheck"):
        warned = watch.conclude()

    assert not warned
    assert not caplog.records


def test_after_the_minute_requests_are_no_longer_counted() -> None:
    clock = Clock()
    watch = _watch(clock)
    watch.observe("10.1.2.3")
    clock.now += 61
    watch.conclude()

    watch.observe("10.9.9.9")

    assert watch.requests == 1
    assert not watch.watching


async def test_the_watch_concludes_at_its_deadline_when_no_request_comes_after_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    watch = _watch(clock)
    watch.observe("10.1.2.3")
    clock.now += 61  # the deadline has passed: nothing left to wait for

    with caplog.at_level(logging.WARNING, "gateway.proxycheck"):
        await watch.conclude_at_deadline()

    assert [r.getMessage() for r in caplog.records if "TRUSTED_PROXIES" in r.getMessage()]
    assert not watch.watching
