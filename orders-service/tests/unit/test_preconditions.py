"""ETags and If-Match (RFC 9110: If-Match compares strongly; a malformed one is 400)."""

from __future__ import annotations

import re
import uuid

import pytest

from api_shared.errors import ValidationFailedError
from orders_service.preconditions import IF_MATCH_PATTERN, MAX_LENGTH, etag, parse_if_match

ORDER_ID = uuid.UUID("2f1c6a52-6a3e-4d0b-9c51-7d3f3b1e0a11")
CURRENT = etag(ORDER_ID, 3)


def allows(*lines: str) -> bool:
    """Whether a request with these If-Match lines may change the order tagged CURRENT."""
    condition = parse_if_match(lines)
    return condition is None or condition.allows(CURRENT)


def test_the_etag_is_strong_and_names_the_order_and_its_version() -> None:
    assert CURRENT == '"2f1c6a52-6a3e-4d0b-9c51-7d3f3b1e0a11-3"'


def test_without_the_header_there_is_no_condition() -> None:
    assert parse_if_match([]) is None


@pytest.mark.parametrize(
    ("if_match", "allowed"),
    [
        ("*", True),
        (CURRENT, True),
        (f'"other", {CURRENT}', True),
        (f' {CURRENT} , "other"', True),
        (f'"other",,{CURRENT}', True),  # empty list elements are ignored (RFC 9110 §5.6.1.2)
        (f", {CURRENT},", True),
        (etag(ORDER_ID, 2), False),
        (etag(uuid.uuid4(), 3), False),
        (f"W/{CURRENT}", False),
        ('"a,b"', False),  # a comma inside a tag's quotes is part of the tag
        ('""', False),
    ],
)
def test_a_well_formed_if_match_allows_only_a_listed_strong_current_tag_or_star(
    if_match: str, allowed: bool
) -> None:
    assert allows(if_match) is allowed


def test_the_lines_of_a_repeated_header_are_one_list() -> None:
    assert allows('"other"', CURRENT)
    assert not allows('"other"', '"another"')


@pytest.mark.parametrize(
    "if_match",
    [
        "",
        " ",
        ",",
        " , ,",
        "3",
        CURRENT[1:-1],
        f"{CURRENT} {CURRENT}",
        f"{CURRENT}*",
        '"other", *',
        '"unterminated',
        f"w/{CURRENT}",
    ],
)
def test_a_malformed_if_match_is_refused_as_a_validation_failure_naming_the_header(
    if_match: str,
) -> None:
    with pytest.raises(ValidationFailedError) as refused:
        parse_if_match([if_match])

    assert refused.value.fields == {
        "If-Match": "must be * or a comma-separated list of entity tags"
    }


def test_several_empty_lines_are_still_malformed() -> None:
    with pytest.raises(ValidationFailedError):
        parse_if_match(["", ""])


@pytest.mark.parametrize("if_match", ["*", CURRENT, f'"other", {CURRENT}', f'"other",\t{CURRENT}'])
def test_the_documented_if_match_admits_every_header_that_can_match(if_match: str) -> None:
    assert re.search(IF_MATCH_PATTERN, if_match)
    assert allows(if_match)


@pytest.mark.parametrize("if_match", ["", "3", CURRENT[1:-1], f"{CURRENT} {CURRENT}"])
def test_an_if_match_the_documentation_refuses_for_its_syntax_is_refused_by_the_service(
    if_match: str,
) -> None:
    assert not re.search(IF_MATCH_PATTERN, if_match)
    with pytest.raises(ValidationFailedError):
        parse_if_match([if_match])


def test_an_if_match_longer_than_the_documented_bound_is_refused_naming_the_header() -> None:
    fits = ", ".join([CURRENT] * (MAX_LENGTH // (len(CURRENT) + 2)))
    assert len(fits) <= MAX_LENGTH
    assert allows(fits)
    too_long = f"{fits}, {CURRENT}"
    assert len(too_long) > MAX_LENGTH

    with pytest.raises(ValidationFailedError) as refused:
        parse_if_match([too_long])

    assert refused.value.fields == {"If-Match": f"must be at most {MAX_LENGTH} characters"}
