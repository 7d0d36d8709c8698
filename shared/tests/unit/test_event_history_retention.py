"""EVENTS_HISTORY_RETENTION_S: how long published outbox rows are kept, read from the
environment and handed to the relay that purges them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from api_shared.events.runtime import events_of
from api_shared.events.settings import PublisherSettings
from api_shared.events.streams import ORDERS


def test_published_events_are_kept_thirty_days_unless_told_otherwise() -> None:
    events = events_of(PublisherSettings(environment="development"), ORDERS, name="orders-service")

    assert events is not None
    assert events.relay.retention_s == 30 * 24 * 3600 == 2592000


def test_the_retention_is_read_from_its_variable_and_given_to_the_relay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTS_HISTORY_RETENTION_S", "3600")

    events = events_of(PublisherSettings(environment="development"), ORDERS, name="users-service")

    assert events is not None
    assert events.relay.retention_s == 3600


@pytest.mark.parametrize("seconds", ["0", "-1", "soon"])
def test_a_retention_that_keeps_nothing_or_is_no_number_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, seconds: str
) -> None:
    monkeypatch.setenv("EVENTS_HISTORY_RETENTION_S", seconds)

    with pytest.raises(ValidationError, match="EVENTS_HISTORY_RETENTION_S"):
        PublisherSettings(environment="development")
