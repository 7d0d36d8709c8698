"""The shared page contract: limit/offset clamping, sort and filter checks, the page body;
and the cursor pages' after/limit and body."""

from __future__ import annotations

import pytest
from sanic import Request
from sanic.compat import Header

from api_shared.errors import BadFilterError, BadSortError, ValidationFailedError
from api_shared.paging import (
    MAX_OFFSET,
    CursorRequest,
    PageRequest,
    Sort,
    choice,
    cursor_body,
    page_body,
    parse_cursor,
    parse_page,
    parse_request_cursor,
    parse_request_page,
)

SORTS = ("createdAt", "name")
FILTERS = {"role": choice("customer", "admin")}


def parse(*pairs: tuple[str, str]) -> PageRequest:
    return parse_page(pairs, sorts=SORTS, default_sort="createdAt", filters=FILTERS)


def test_no_parameters_give_the_defaults() -> None:
    assert parse() == PageRequest(limit=20, offset=0, sort=Sort("createdAt", descending=False))


@pytest.mark.parametrize(
    ("raw", "applied"),
    [("1", 1), ("55", 55), ("100", 100), ("101", 100), ("100000", 100), ("0", 1), ("-7", 1)],
)
def test_limit_is_clamped_between_1_and_100(raw: str, applied: int) -> None:
    assert parse(("limit", raw)).limit == applied


@pytest.mark.parametrize(("raw", "applied"), [("0", 0), ("35", 35), ("-1", 0), ("-500", 0)])
def test_offset_below_zero_becomes_zero(raw: str, applied: int) -> None:
    assert parse(("offset", raw)).offset == applied


@pytest.mark.parametrize("raw", [str(2**53), str(2**64), "9" * 100])
def test_an_offset_beyond_any_database_integer_becomes_the_largest_offset(raw: str) -> None:
    assert parse(("offset", raw)).offset == MAX_OFFSET == 2**53 - 1


@pytest.mark.parametrize("name", ["limit", "offset"])
@pytest.mark.parametrize("raw", ["", "abc", "1.5", "1e3", "0x10", "ten"])
def test_a_limit_or_offset_that_is_not_an_integer_names_the_parameter(name: str, raw: str) -> None:
    with pytest.raises(ValidationFailedError) as caught:
        parse((name, raw))

    assert caught.value.fields == {name: "must be an integer"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("createdAt", Sort("createdAt", descending=False)),
        ("-createdAt", Sort("createdAt", descending=True)),
        ("name", Sort("name", descending=False)),
        ("-name", Sort("name", descending=True)),
    ],
)
def test_each_allowed_sort_is_read_with_its_direction(raw: str, expected: Sort) -> None:
    sort = parse(("sort", raw)).sort

    assert sort == expected
    assert sort.wire == raw


@pytest.mark.parametrize(
    ("raw", "ordering"), [("createdAt", "created_at"), ("-createdAt", "-created_at")]
)
def test_a_sort_orders_by_the_model_field_of_its_wire_name(raw: str, ordering: str) -> None:
    sort = parse(("sort", raw)).sort

    assert sort.ordering({"createdAt": "created_at", "name": "name"}) == ordering


@pytest.mark.parametrize("raw", ["", "-", "email", "-email", "--name", "Name", "name,createdAt"])
def test_any_other_sort_is_bad_sort(raw: str) -> None:
    with pytest.raises(BadSortError) as caught:
        parse(("sort", raw))

    assert "createdAt, -createdAt, name, -name" in caught.value.message


def test_an_allowed_filter_is_parsed() -> None:
    assert parse(("role", "admin")).filters == {"role": "admin"}


@pytest.mark.parametrize("raw", ["", "Admin", "owner"])
def test_a_filter_value_outside_its_choices_is_a_validation_error(raw: str) -> None:
    with pytest.raises(ValidationFailedError) as caught:
        parse(("role", raw))

    assert caught.value.fields == {"role": "must be one of: customer, admin"}


@pytest.mark.parametrize("name", ["email", "name", "page", "Role", ""])
def test_any_other_query_parameter_is_bad_filter(name: str) -> None:
    with pytest.raises(BadFilterError):
        parse((name, "x"))


def test_a_parameter_given_twice_is_a_validation_error() -> None:
    with pytest.raises(ValidationFailedError) as caught:
        parse(("limit", "5"), ("limit", "6"))

    assert caught.value.fields == {"limit": "is given more than once"}


def test_the_page_body_reports_the_applied_values_and_the_total() -> None:
    page = parse(("limit", "500"), ("offset", "-3"))

    body = page_body([{"id": "a"}], total=42, page=page)

    assert body == {"data": [{"id": "a"}], "page": {"total": 42, "limit": 100, "offset": 0}}


def test_an_empty_page_still_carries_its_page_object() -> None:
    assert page_body([], total=0, page=parse()) == {
        "data": [],
        "page": {"total": 0, "limit": 20, "offset": 0},
    }


def request_to(target: bytes) -> Request:
    # A bare request, as the paging rules see it: no transport, no app.
    return Request(target, Header(), "1.1", "GET", None, None)  # type: ignore[arg-type]


def test_a_requests_page_is_read_from_its_query_string() -> None:
    page = parse_request_page(
        request_to(b"/users?sort=-name&role=admin&offset=5"),
        sorts=SORTS,
        default_sort="createdAt",
        filters=FILTERS,
    )

    assert page == PageRequest(
        limit=20, offset=5, sort=Sort("name", descending=True), filters={"role": "admin"}
    )


def test_a_blank_value_in_a_requests_query_is_invalid_rather_than_the_default() -> None:
    with pytest.raises(ValidationFailedError) as raised:
        parse_request_page(request_to(b"/users?limit="), sorts=SORTS, default_sort="createdAt")

    assert raised.value.fields == {"limit": "must be an integer"}


def test_a_cursor_without_parameters_starts_at_the_beginning_with_its_default_limit() -> None:
    assert parse_cursor([], default_limit=100) == CursorRequest(after=0, limit=100)
    assert parse_cursor([]) == CursorRequest(after=0, limit=20)


@pytest.mark.parametrize(
    ("raw", "applied"), [("0", 0), ("7", 7), (str(2**53), MAX_OFFSET), ("9" * 100, MAX_OFFSET)]
)
def test_after_is_read_and_clamped_to_the_largest_position(raw: str, applied: int) -> None:
    assert parse_cursor([("after", raw)]).after == applied


@pytest.mark.parametrize(("raw", "applied"), [("1", 1), ("100", 100), ("101", 100), ("0", 1)])
def test_a_cursors_limit_is_clamped_as_a_lists(raw: str, applied: int) -> None:
    assert parse_cursor([("limit", raw)], default_limit=100).limit == applied


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("-1", "must be at least 0"),
        ("x", "must be an integer"),
        ("1.5", "must be an integer"),
        ("", "must be an integer"),
    ],
)
def test_an_after_that_is_not_a_non_negative_integer_is_a_validation_error(
    raw: str, reason: str
) -> None:
    with pytest.raises(ValidationFailedError) as caught:
        parse_cursor([("after", raw)])

    assert caught.value.fields == {"after": reason}


@pytest.mark.parametrize("name", ["offset", "sort", "before", "type"])
def test_a_cursor_takes_no_other_parameter(name: str) -> None:
    with pytest.raises(BadFilterError) as caught:
        parse_cursor([(name, "1")])

    assert "allowed: none" in caught.value.message


def test_a_cursor_parameter_given_twice_is_a_validation_error() -> None:
    with pytest.raises(ValidationFailedError) as caught:
        parse_cursor([("after", "1"), ("after", "2")])

    assert caught.value.fields == {"after": "is given more than once"}


def test_a_requests_cursor_is_read_from_its_query_string() -> None:
    cursor = parse_request_cursor(request_to(b"/orders/x/events?after=3&limit=2"))

    assert cursor == CursorRequest(after=3, limit=2)


def test_the_cursor_body_says_where_the_next_page_starts() -> None:
    cursor = CursorRequest(after=3, limit=2)

    full = cursor_body([{"sequence": 4}, {"sequence": 5}], cursor, next_after=5, has_more=True)
    empty = cursor_body([], cursor, next_after=None, has_more=False)

    assert full == {
        "data": [{"sequence": 4}, {"sequence": 5}],
        "page": {"after": 3, "limit": 2, "next": 5, "hasMore": True},
    }
    assert empty["page"] == {"after": 3, "limit": 2, "next": None, "hasMore": False}
