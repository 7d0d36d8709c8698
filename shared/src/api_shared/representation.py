"""The wire representation: JSON bodies, camelCase keys, ``...Z`` timestamps.

The rules are docs/api.md#representation.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import Enum
from operator import itemgetter
from typing import Any, Union, cast, get_args, get_origin
from uuid import UUID

import orjson
from asyncpg import Record
from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler, field_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from api_shared.responses import Response

JSON_CONTENT_TYPE = "application/json"
# Patterns of the OpenAPI documents (ECMA-262 regular expressions, matched anywhere).
NO_NUL_PATTERN = "^[^\\u0000]*$"
# Not only whitespace, as Python's ``str.strip`` sees it: ECMA's ``\s`` lacks \x1c-\x1f, \x85.
NOT_BLANK_PATTERN = r"[^\s\x1c-\x1f\x85]"


def dumps(value: Any) -> str:
    """Serialise to JSON text; the one encoder every service uses (Sanic's ``dumps``)."""
    return orjson.dumps(value).decode()


# How ``json_response`` writes a datetime in UTC: ``YYYY-MM-DDThh:mm:ssZ``, as format_timestamp.
TIMESTAMP_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_OMIT_MICROSECONDS | orjson.OPT_NAIVE_UTC


def as_utc(moment: datetime) -> datetime:
    """The same moment in UTC; a naive one is taken as UTC."""
    if moment.tzinfo is UTC:  # asyncpg's are
        return moment
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _uuid_text(value: Any) -> str:
    """orjson's fallback: asyncpg's UUIDs (a subclass of ``uuid.UUID``, which orjson writes
    itself only exactly) as their text; anything else stays unserialisable."""
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def format_timestamp(moment: datetime) -> str:
    """Render a timestamp as ``YYYY-MM-DDThh:mm:ssZ`` in UTC; a naive one is taken as UTC."""
    # isoformat is C and cheaper than strftime: "2026-11-22T08:30:15+00:00"[:19] + "Z".
    return as_utc(moment).isoformat(timespec="seconds")[:19] + "Z"


class WireModel(BaseModel):
    """Base of response schemas: camelCase on the wire, built from attributes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


# What orjson writes as it is, the way ``wire()`` writes it (UUIDs and enums as their text).
_NATIVE = (str, bool, int, float, UUID)


class WireEncoder:
    """Rows of Python values (field name → value) as body parts that ``json_response`` writes
    exactly as it writes ``model.model_validate(row).wire()``.

    For list pages, where validating and dumping a model per row cost more than reading
    the rows (docs/benchmarks.md): the row's values are only renamed to the model's aliases,
    and orjson writes UUIDs, enums and timestamps itself (``TIMESTAMP_OPTIONS``). Derived
    from the model's fields; a field of any other type is refused when the encoder is made.
    A datetime field is written as ``format_timestamp`` writes it, as every WireModel's
    field serializer does. Tests compare both on real rows.
    """

    def __init__(self, model: type[WireModel]) -> None:
        names, aliases, timestamps = [], [], []
        for name, info in model.model_fields.items():
            kind = _plain_type(info.annotation)
            if kind is datetime:
                timestamps.append(info.alias or name)
            elif not (kind in _NATIVE or issubclass(kind, Enum)):
                raise TypeError(f"{model.__name__}.{name}: no wire form for {info.annotation!r}")
            names.append(name)
            aliases.append(info.alias or name)
        self._names, self._aliases, self._timestamps = tuple(names), tuple(aliases), timestamps
        self._values = itemgetter(*names) if len(names) > 1 else (lambda row: (row[names[0]],))

    def __call__(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """One row, its values found by name."""
        return self._part(self._values(row))

    def rows(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rows of one query; by position when they are asyncpg records whose columns
        are the model's fields in order (a values query of them), 2.5 times cheaper."""
        if rows and isinstance(rows[0], Record) and tuple(rows[0].keys()) == self._names:
            return [self._part(record) for record in cast(Sequence[Record], rows)]
        return [self(row) for row in rows]

    def _part(self, values: Iterable[Any]) -> dict[str, Any]:
        part = dict(zip(self._aliases, values, strict=True))
        for alias in self._timestamps:
            moment = part[alias]
            if moment is not None and moment.tzinfo is not UTC:
                part[alias] = as_utc(moment)
        return part


def _plain_type(annotation: Any) -> type:
    """``X`` for ``X`` and for ``X | None``."""
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
        if len(kinds) == 1:
            annotation = kinds[0]
    return annotation if isinstance(annotation, type) else object


class InputModel(BaseModel):
    """Base of request schemas: camelCase keys, unknown fields refused, no type coercion."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        extra="forbid",
        strict=True,
        str_strip_whitespace=False,
    )

    @field_validator("*")
    @classmethod
    def _no_nul_characters(cls, value: Any) -> Any:
        # PostgreSQL text cannot hold U+0000 (the insert would fail with a 500), and no
        # name, email, password or note needs one: refuse it everywhere, by field.
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The schema says ``_no_nul_characters`` too, for every free-text property."""
        json_schema = handler(core_schema)
        for prop in handler.resolve_ref_schema(json_schema).get("properties", {}).values():
            if prop.get("type") == "string" and not ("enum" in prop or "format" in prop):
                if "pattern" in prop:  # one pattern a schema: the other in an allOf
                    prop.setdefault("allOf", []).append({"pattern": NO_NUL_PATTERN})
                else:
                    prop["pattern"] = NO_NUL_PATTERN
        return json_schema


def json_response(
    body: Any,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A JSON response encoded with the shared encoder."""
    return Response(
        orjson.dumps(body, default=_uuid_text, option=TIMESTAMP_OPTIONS),
        status=status,
        headers=dict(headers or {}),
        content_type=JSON_CONTENT_TYPE,
    )


def item_body(item: Mapping[str, Any] | WireModel) -> dict[str, Any]:
    """``{"data": item}``: the envelope of one resource."""
    return {"data": item.wire() if isinstance(item, WireModel) else dict(item)}
