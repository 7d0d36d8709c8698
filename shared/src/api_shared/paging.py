"""Lists' ``limit``/``offset``/``sort``/filters and ``{data, page}`` body.

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

    def ordering(self, fields: Mapping[str, str]) -> str:
        """Tortoise's ``order_by`` of this sort; ``fields`` maps wire names to model fields."""
        model_field = fields[self.field]
        return f"-{model_field}" if self.descending else model_field


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
    values: dict[str, str] = {}
    for name, value in query:
        if name not in PAGING_PARAMETERS and name not in filters:
            raise BadFilterError(
                f"Filtering on {name!r} is not allowed; allowed: {', '.join(filters) or 'none'}."
            )
        if name in values:
            raise ValidationFailedError(
                f"{name} is given more than once", fields={name: "is given more than once"}
            )
        values[name] = value

    limit = _parse_int("limit", values["limit"]) if "limit" in values else DEFAULT_LIMIT
    offset = _parse_int("offset", values["offset"]) if "offset" in values else 0
    sort = _parse_sort(values.get("sort", default_sort), sorts)

    chosen: dict[str, Any] = {}
    for name, parse in filters.items():
        if name in values:
            try:
                chosen[name] = parse(values[name])
            except ValueError as error:
                raise ValidationFailedError(f"{name} {error}", fields={name: str(error)}) from None
    return PageRequest(
        limit=min(max(limit, 1), MAX_LIMIT),
        offset=min(max(offset, 0), MAX_OFFSET),
        sort=sort,
        filters=chosen,
    )


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
