"""What an operation takes, said the same way by every service: JSON bodies, path ids, page
and cursor parameters, and parameters sanic-ext cannot say (headers, JSON text in the query
string)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from sanic_ext.extensions.openapi.definitions import Parameter, RequestBody
from sanic_ext.extensions.openapi.types import Schema

from api_shared.media import JSON
from api_shared.openapi.store import operation_of, schema_ref
from api_shared.paging import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET

F = TypeVar("F", bound=Callable[..., Any])
Parameters = list[dict[str, Any] | Parameter | str]
"""What ``openapi.definition(parameter=...)`` takes."""

UUID_LENGTH = 36  # a UUID's text: every id in a path or a filter


def json_body(
    model: type[BaseModel],
    *,
    media_types: Iterable[str] = (JSON,),
    description: str = "",
    required: bool = True,
) -> RequestBody:
    """A JSON request body of ``model`` (for ``openapi.definition(body=...)``); ``required``
    False where the operation also takes none."""
    return RequestBody(
        dict.fromkeys(media_types, schema_ref(model)),
        required=required,
        description=description or None,
    )


def path_id(name: str, description: str) -> Parameter:
    """A path id: a UUID (a malformed one is answered 404, docs/api.md#representation)."""
    return Parameter(
        name,
        Schema(type="string", format="uuid", maxLength=UUID_LENGTH),
        "path",
        description=description,
        required=True,
    )


class _ContentParameter(Parameter):
    """sanic-ext's Parameter has a schema; this one is given per media type instead (OpenAPI's
    ``content``), as a parameter holding JSON text is."""

    content: dict[str, Any]
    __ignore__ = ["schema"]  # noqa: RUF012 - sanic-ext's own class attribute


def json_query_parameter(
    name: str, schema: Mapping[str, Any], description: str
) -> Callable[[F], F]:
    """Document an optional query parameter holding the JSON text of a ``schema`` value."""

    def document(func: F) -> F:
        operation_of(func).parameters.append(
            _ContentParameter(
                name,
                location="query",
                description=description,
                content={JSON: {"schema": dict(schema)}},
            )
        )
        return func

    return document


def header_parameter(
    name: str, schema: Schema, description: str, *, required: bool = False
) -> Parameter:
    return Parameter(name, schema, "header", description=description, required=required)


def page_parameters(
    sorts: Iterable[str], default_sort: str, filters: Mapping[str, Schema] | None = None
) -> Parameters:
    """``limit``, ``offset``, ``sort`` and the list's filters (docs/api.md#users)."""
    parameters: Parameters = [
        Parameter(
            "limit",
            _limit_schema(DEFAULT_LIMIT),
            "query",
            description=(
                f"Page size: default {DEFAULT_LIMIT}, above {MAX_LIMIT} becomes {MAX_LIMIT}, "
                "below 1 becomes 1; not an integer → 400 VALIDATION_FAILED."
            ),
        ),
        Parameter(
            "offset",
            Schema(type="integer", format="int64", minimum=0, maximum=MAX_OFFSET, default=0),
            "query",
            description=f"Items to skip: default 0; below 0 becomes 0, above {MAX_OFFSET} that.",
        ),
        Parameter(
            "sort",
            Schema(type="string", enum=list(sorts), default=default_sort),
            "query",
            description="A field, descending with a leading '-'; another → 400 BAD_SORT.",
        ),
    ]
    for name, schema in (filters or {}).items():
        parameters.append(
            Parameter(name, schema, "query", description=f"Only items of this {name}.")
        )
    return parameters


def _limit_schema(default: int) -> Schema:
    # The range a client should send; outside it the server clamps (the description says so).
    return Schema(type="integer", format="int32", minimum=1, maximum=MAX_LIMIT, default=default)


def cursor_parameters(default_limit: int = DEFAULT_LIMIT) -> Parameters:
    """``after`` and ``limit`` of a cursor page (docs/api.md#paging-and-sorting)."""
    return [
        Parameter(
            "after",
            Schema(type="integer", format="int64", minimum=0, maximum=MAX_OFFSET, default=0),
            "query",
            description=(
                "Only items after this position (the previous page's `page.next`): default 0; "
                f"above {MAX_OFFSET} becomes that; not a non-negative integer → 400 "
                "VALIDATION_FAILED."
            ),
        ),
        Parameter(
            "limit",
            _limit_schema(default_limit),
            "query",
            description=(
                f"Page size: default {default_limit}, above {MAX_LIMIT} becomes {MAX_LIMIT}, "
                "below 1 becomes 1; not an integer → 400 VALIDATION_FAILED."
            ),
        ),
    ]


def string_enum(values: Iterable[str]) -> Schema:
    return Schema(type="string", enum=[str(value) for value in values])
