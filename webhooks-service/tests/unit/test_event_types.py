"""Which event types an endpoint's ``eventTypes`` entries select, and which entries are valid."""

from __future__ import annotations

import pytest

from webhooks_service.endpoints.event_types import ENTRIES, KNOWN_TYPES, entry_problem, matches


@pytest.mark.parametrize(
    ("entries", "event_type", "selected"),
    [
        (["orders.order.shipped"], "orders.order.shipped", True),
        (["orders.order.shipped"], "orders.order.created", False),
        (["orders.*"], "orders.order.created", True),
        (["orders.order.*"], "orders.order.deleted", True),
        (["orders.*"], "users.user.created", False),
        (["*"], "users.user.deleted", True),
        (["webhooks.*"], "webhooks.endpoint.disabled", True),
        (["orders.*"], "webhooks.endpoint.disabled", False),
        (["users.user.created", "orders.order.*"], "orders.order.patched", True),
    ],
)
def test_an_entry_selects_its_type_or_the_types_under_its_prefix(
    entries: list[str], event_type: str, selected: bool
) -> None:
    assert matches(entries, event_type) is selected


@pytest.mark.parametrize("entry", ["*", "orders.*", "users.user.*", *KNOWN_TYPES])
def test_known_types_and_patterns_selecting_one_are_valid(entry: str) -> None:
    assert entry_problem(entry) is None


@pytest.mark.parametrize(
    "entry", ["orders.order.shiped", "orders*", "*.created", "books.*", "", "orders.order"]
)
def test_a_misspelt_type_or_a_pattern_selecting_nothing_is_invalid(entry: str) -> None:
    assert entry_problem(entry) is not None


def test_the_documented_entries_are_the_known_types_and_every_pattern_selecting_one() -> None:
    assert set(ENTRIES) == {
        *KNOWN_TYPES,
        "*",
        "orders.*",
        "orders.order.*",
        "users.*",
        "users.user.*",
        "webhooks.*",
        "webhooks.endpoint.*",
    }
    assert all(entry_problem(entry) is None for entry in ENTRIES)
