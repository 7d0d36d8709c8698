"""The rate-limit policies the settings describe (Limits.from_settings)."""

from __future__ import annotations

from gateway.dispatch import Limits
from gateway.ratelimit import Policy
from gateway.settings import Settings


def test_per_minute_limits_hold_their_count_at_once_and_refill_over_the_minute() -> None:
    limits = Limits.from_settings(
        Settings(login_rate_limit_per_minute=12, refresh_session_rate_limit_per_minute=6)
    )

    assert limits.login == Policy("login", 0.2, 12)
    assert limits.refresh_session == Policy("refresh-session", 0.1, 6)
    assert limits.login.window_s == 60


def test_unset_address_and_account_limits_follow_the_callers_by_their_factors() -> None:
    limits = Limits.from_settings(
        Settings(rate_limit_rps=5.0, rate_limit_burst=20, login_rate_limit_per_minute=6)
    )

    assert limits.default == Policy("default", 5.0, 20)
    assert limits.address == Policy("address", 20.0, 80)
    assert limits.login_account == Policy("login-account", 0.1, 6)
    assert limits.login_account_ceiling == Policy("login-account-ceiling", 1.0, 60)


def test_set_address_and_account_limits_are_taken_as_given() -> None:
    limits = Limits.from_settings(
        Settings(
            address_rate_limit_rps=7.0,
            address_rate_limit_burst=9,
            login_account_rate_limit_per_minute=3,
            login_account_ceiling_per_minute=30,
        )
    )

    assert limits.address == Policy("address", 7.0, 9)
    assert limits.login_account == Policy("login-account", 0.05, 3)
    assert limits.login_account_ceiling == Policy("login-account-ceiling", 0.5, 30)
