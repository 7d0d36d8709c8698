"""The rate-limit policies the settings describe (Limits.from_settings)."""

from __future__ import annotations

import pytest

from api_shared.ratelimit import Policy
from gateway.pipeline import Limits
from gateway.settings import Settings


def test_per_minute_limits_hold_their_count_at_once_and_refill_over_the_minute() -> None:
    limits = Limits.from_settings(
        Settings(login_rate_limit_per_minute=12, refresh_rate_limit_per_minute=6)
    )

    assert limits.charged["login"] == Policy("login", 0.2, 12)
    assert limits.charged["refresh"] == Policy("refresh", 0.1, 6)
    assert limits.charged["login"].window_s == 60


def test_unset_address_limits_follow_the_callers_by_their_factor() -> None:
    limits = Limits.from_settings(Settings(rate_limit_rps=5.0, rate_limit_burst=20))

    assert limits.default == Policy("default", 5.0, 20)
    assert limits.address == Policy("address", 20.0, 80)


def test_set_address_limits_are_taken_as_given() -> None:
    limits = Limits.from_settings(Settings(address_rate_limit_rps=7.0, address_rate_limit_burst=9))

    assert limits.address == Policy("address", 7.0, 9)


def test_unset_api_key_limits_are_the_callers_and_set_ones_are_taken_as_given() -> None:
    unset = Limits.from_settings(Settings(rate_limit_rps=5.0, rate_limit_burst=20))
    given = Limits.from_settings(
        Settings(rate_limit_rps=5.0, api_key_rate_limit_rps=2.0, api_key_rate_limit_burst=3)
    )

    assert unset.api_key == Policy("api-key", 5.0, 20)
    assert given.api_key == Policy("api-key", 2.0, 3)


def test_api_key_limits_are_read_from_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEY_RATE_LIMIT_RPS", "7.5")
    monkeypatch.setenv("API_KEY_RATE_LIMIT_BURST", "9")

    assert Limits.from_settings(Settings()).api_key == Policy("api-key", 7.5, 9)


def test_users_service_is_one_list_for_forwarding_and_for_asking_about_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("USERS_SERVICE_URL", "http://a:8001/,http://b:8001")
    monkeypatch.setenv("STANDING_CACHE_S", "2")

    settings = Settings()

    assert settings.users_service_urls == ["http://a:8001", "http://b:8001"]
    assert settings.standing_cache_s == 2.0


def test_every_budget_the_route_table_names_has_a_policy() -> None:
    from gateway.routing import ROUTES

    named = {policy for route in ROUTES for _, policy in route.charges}

    assert named == set(Limits.from_settings(Settings()).charged) == {
        "login", "refresh", "signup", "reset-request", "account-token"
    }  # fmt: skip
