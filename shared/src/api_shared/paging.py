"""Lists' ``limit``/``offset``/``sort``/filters and ``{data, page}`` body; and the cursor
pages of a sequence (``after``/``limit``), whose ``page`` says where the next one starts.

The rules are docs/api.md#paging-and-sorting.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sanic import Request

from api_shared.errors import BadFilterError, BadSortError, ValidationFailedError

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# Larger offsets become this one: past every row all the same, yet within what databases take
# as an OFFSET (64-bit) and what every JSON client reads back exactly in ``page.offset``.
MAX_OFFSET = 2**53 - 1
PAGING_PARAMETERS = ("limit", "offset", "sort")
CURSOR_PARAMETERS = ("after", "limit")

FilterParser = Callable[[str], Any]
"""Turns a filter's raw value into the value to filter on; raises ValueError when invalid."""


@dataclass(frozen=True, slots=True)
class Sort:
    """A sort key as the client named it (``-createdAt``) and what it means."""

    field: str
    descending: bool

    @property
    def wire(self) -> str:
        return f"-{self.field}" if self.descending else self.field

    def column(self, fields: Mapping[str, str]) -> str:
        """The model field this sort names; ``fields`` maps wire names to model fields."""
        return fields[self.field]

    def ordering(self, fields: Mapping[str, str]) -> str:
        """Tortoise's ``order_by`` of this sort (``column``, ``-`` first when descending)."""
        model_field = self.column(fields)
        return f"-{model_field}" if self.descending else model_field


def page_order(column: str, *, descending: bool = False, tie: str = "id") -> tuple[str, str]:
    """Tortoise's ``order_by`` of one page: ``column``, then ``tie`` in the same direction, so
    rows equal on ``column`` keep one order and pages never skip or repeat a row. Descending
    with ``descending``, or when ``column`` comes ``-`` first (``Sort.ordering``'s form)."""
    if column.startswith("-"):
        column, descending = column[1:], True
    direction = "-" if descending else ""
    return f"{direction}{column}", f"{direction}{tie}"


@dataclass(frozen=True, slots=True)
class PageRequest:
    """What a list request asked for, after clamping and checking."""

    limit: int
    offset: int
    sort: Sort
    filters: Mapping[str, Any] = field(default_factory=dict)


_INTEGER = re.compile(r"[+-]?[0-9]{1,100}")  # ASCII digits only; int() also takes "1_000"


def _parse_int(name: str, raw: str) -> int:
    """An integer however large (it is clamped next), or VALIDATION_FAILED naming ``name``."""
    if not _INTEGER.fullmatch(raw.strip()):
        raise ValidationFailedError(
            f"{name} must be an integer", fields={name: "must be an integer"}
        )
    return int(raw)


def parse_page(
    query: Iterable[tuple[str, str]],
    *,
    sorts: Sequence[str],
    default_sort: str,
    filters: Mapping[str, FilterParser] | None = None,
) -> PageRequest:
    """Parse a list request's query parameters (pairs, blank values kept) per
    docs/api.md#paging-and-sorting.

    ``sorts`` are the sortable wire field names; each may be prefixed with ``-``.
    ``filters`` maps each allowed filter parameter to its parser.
    """
    filters = filters or {}
    values = _query_values(query, PAGING_PARAMETERS, filters)
    limit = _parse_int("limit", values["limit"]) if "limit" in values else DEFAULT_LIMIT
    offset = _parse_int("offset", values["offset"]) if "offset" in values else 0
    sort = _parse_sort(values.get("sort", default_sort), sorts)

    return PageRequest(
        limit=min(max(limit, 1), MAX_LIMIT),
        offset=min(max(offset, 0), MAX_OFFSET),
        sort=sort,
        filters=_chosen(values, filters),
    )


def parse_request_filters(request: Request, filters: Mapping[str, FilterParser]) -> dict[str, Any]:
    """The filters of a request that is not a list (an event stream, say): each parsed by
    its parser; BAD_FILTER for any other parameter, as on a list."""
    pairs: list[tuple[str, str]] = request.get_query_args(keep_blank_values=True)
    return _chosen(_query_values(pairs, (), filters), filters)


def _chosen(values: Mapping[str, str], filters: Mapping[str, FilterParser]) -> dict[str, Any]:
    """The filters given among ``values``, parsed; VALIDATION_FAILED for an invalid one."""
    chosen: dict[str, Any] = {}
    for name, parse in filters.items():
        if name in values:
            try:
                chosen[name] = parse(values[name])
            except ValueError as error:
                raise ValidationFailedError(f"{name} {error}", fields={name: str(error)}) from None
    return chosen


def _query_values(
    query: Iterable[tuple[str, str]], parameters: Sequence[str], filters: Mapping[str, FilterParser]
) -> dict[str, str]:
    """The query's values by name: BAD_FILTER for a name neither among ``parameters`` nor a
    filter, VALIDATION_FAILED for a name given twice."""
    values: dict[str, str] = {}
    for name, value in query:
        if name not in parameters and name not in filters:
            raise BadFilterError(
                f"Filtering on {name!r} is not allowed; allowed: {', '.join(filters) or 'none'}."
            )
        if name in values:
            raise ValidationFailedError(
                f"{name} is given more than once", fields={name: "is given more than once"}
            )
        values[name] = value
    return values


def parse_request_page(
    request: Request,
    *,
    sorts: Sequence[str],
    default_sort: str,
    filters: Mapping[str, FilterParser] | None = None,
) -> PageRequest:
    """``parse_page`` of the request's query string: what a list route reads. Blank values
    are kept, so that ``?limit=`` is an invalid limit rather than the default one."""
    pairs: list[tuple[str, str]] = request.get_query_args(keep_blank_values=True)
    return parse_page(pairs, sorts=sorts, default_sort=default_sort, filters=filters)


def _parse_sort(raw: str, sorts: Sequence[str]) -> Sort:
    descending = raw.startswith("-")
    name = raw[1:] if descending else raw
    if name not in sorts:
        raise BadSortError(f"Cannot sort by {raw!r}; allowed: {', '.join(allowed_sorts(sorts))}.")
    return Sort(name, descending)


def allowed_sorts(sorts: Sequence[str]) -> list[str]:
    return [variant for name in sorts for variant in (name, f"-{name}")]


def choice(*allowed: str) -> FilterParser:
    """A filter parser accepting exactly one of ``allowed``."""

    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(f"must be one of: {', '.join(allowed)}")
        return raw

    return parse


def page_body(items: Sequence[Mapping[str, Any]], total: int, page: PageRequest) -> dict[str, Any]:
    """``{"data": [...], "page": {"total", "limit", "offset"}}``."""
    return {
        "data": list(items),
        "page": {"total": total, "limit": page.limit, "offset": page.offset},
    }


@dataclass(frozen=True, slots=True)
class CursorRequest:
    """A cursor page's request, after clamping and checking: the items after ``after`` (a
    position in a sequence, such as an event's ``sequence``), at most ``limit``."""

    after: int
    limit: int


def parse_cursor(
    query: Iterable[tuple[str, str]], *, default_limit: int = DEFAULT_LIMIT
) -> CursorRequest:
    """Parse ``after`` and ``limit`` per docs/api.md#paging-and-sorting: ``limit`` as on
    every list; ``after`` a non-negative integer (a cursor names a position: a negative one
    is a mistake, not a small one), above 2**53 - 1 that; any other parameter is BAD_FILTER."""
    values = _query_values(query, CURSOR_PARAMETERS, {})
    limit = _parse_int("limit", values["limit"]) if "limit" in values else default_limit
    after = _parse_int("after", values["after"]) if "after" in values else 0
    if after < 0:
        raise ValidationFailedError(
            "after must be a non-negative integer", fields={"after": "must be at least 0"}
        )
    return CursorRequest(after=min(after, MAX_OFFSET), limit=min(max(limit, 1), MAX_LIMIT))


def parse_request_cursor(request: Request, *, default_limit: int = DEFAULT_LIMIT) -> CursorRequest:
    """``parse_cursor`` of the request's query string (blank values kept, as lists do)."""
    pairs: list[tuple[str, str]] = request.get_query_args(keep_blank_values=True)
    return parse_cursor(pairs, default_limit=default_limit)


def cursor_body(
    items: Sequence[Mapping[str, Any]],
    cursor: CursorRequest,
    *,
    next_after: int | None,
    has_more: bool,
) -> dict[str, Any]:
    """``{"data": [...], "page": {"after", "limit", "next", "hasMore"}}``: ``next`` is the
    ``after`` of the following page (the last item's position), null when ``items`` is
    empty (ask again with the same ``after``)."""
    return {
        "data": list(items),
        "page": {
            "after": cursor.after,
            "limit": cursor.limit,
            "next": next_after,
            "hasMore": has_more,
        },
    }
