"""The retry schedule: exponential delays, jittered, for at most a day, then give up."""

from __future__ import annotations

import pytest

from webhooks_service.backoff import DEFAULT_DELAYS_S, JITTER, MAX_SPAN_S, next_delay
from webhooks_service.settings import Settings


def _low(low: float, high: float) -> float:
    return low


def _high(low: float, high: float) -> float:
    return high


@pytest.mark.parametrize(
    ("failures", "delay_s"),
    [(1, 5.0), (2, 300.0), (3, 1800.0), (4, 7200.0), (5, 18000.0), (6, 36000.0)],
)
def test_each_failure_waits_the_schedules_delay_within_the_jitter(
    failures: int, delay_s: float
) -> None:
    low = next_delay(DEFAULT_DELAYS_S, failures, uniform=_low)
    high = next_delay(DEFAULT_DELAYS_S, failures, uniform=_high)
    assert low == pytest.approx(delay_s * (1 - JITTER))
    assert high == pytest.approx(delay_s * (1 + JITTER))


def test_the_delays_grow_with_every_failure() -> None:
    delays = [next_delay(DEFAULT_DELAYS_S, n, uniform=_low) or 0 for n in range(1, 7)]
    assert delays == sorted(delays)
    assert len(set(delays)) == len(delays)


def test_after_the_last_delay_the_delivery_is_given_up() -> None:
    assert next_delay(DEFAULT_DELAYS_S, len(DEFAULT_DELAYS_S) + 1) is None


def test_the_whole_schedule_with_the_most_jitter_stays_within_a_day() -> None:
    total = sum(next_delay(DEFAULT_DELAYS_S, n, uniform=_high) or 0 for n in range(1, 7))
    assert total <= MAX_SPAN_S


def test_a_configured_schedule_longer_than_a_day_is_refused() -> None:
    with pytest.raises(ValueError, match="24 h"):
        Settings(retry_delays_s="36000,36000,36000")


def test_a_configured_schedule_is_read_from_a_comma_list() -> None:
    assert Settings(retry_delays_s="0.5,1,2").retry_delays_s == (0.5, 1.0, 2.0)
