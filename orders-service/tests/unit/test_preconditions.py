"""ETags and If-Match matching (RFC 9110: If-Match compares strongly)."""

from __future__ import annotations

import re
import uuid

import pytest

from orders_service.preconditions import IF_MATCH_PATTERN, etag, if_match_allows

ORDER_ID = uuid.UUID("2f1c6a52-6a3e-4d0b-9c51-7d3f3b1e0a11")
CURRENT = etag(ORDER_ID, 3)


def test_the_etag_is_strong_and_names_the_order_and_its_version() -> None:
    assert CURRENT == '"2f1c6a52-6a3e-4d0b-9c51-7d3f3b1e0a11-3"'


@pytest.mark.parametrize(
    ("if_match", "allowed"),
    [
        (None, True),
        ("*", True),
        (CURRENT, True),
        (f'"other", {CURRENT}', True),
        (f' {CURRENT} , "other"', True),
        (etag(ORDER_ID, 2), False),
        (etag(uuid.uuid4(), 3), False),
        (f"W/{CURRENT}", False),
        ("", False),
        ("3", False),
        (CURRENT[1:-1], False),
        (f"{CURRENT} {CURRENT}", False),
        (f'"other",,{CURRENT}', False),
    ],
)
def test_if_match_allows_only_a_listed_strong_current_tag_or_star(
    if_match: str | None, allowed: bool
) -> None:
    assert if_match_allows(if_match, CURRENT) is allowed


@pytest.mark.parametrize("if_match", ["*", CURRENT, f'"other", {CURRENT}', f'"other",\t{CURRENT}'])
def test_the_documented_if_match_admits_every_header_that_can_match(if_match: str) -> None:
    assert re.search(IF_MATCH_PATTERN, if_match)
    assert if_match_allows(if_match, CURRENT)


@pytest.mark.parametrize(
    "if_match",
    [f"W/{CURRENT}", "", "3", CURRENT[1:-1], f"{CURRENT} {CURRENT}", f'"other",,{CURRENT}'],
)
def test_an_if_match_the_documentation_refuses_matches_nothing(if_match: str) -> None:
    assert not re.search(IF_MATCH_PATTERN, if_match)
    assert not if_match_allows(if_match, CURRENT)
