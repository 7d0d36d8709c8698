"""The wire representation: JSON bodies, camelCase keys, ``...Z`` timestamps.

The rules are docs/api.md#representation.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler, field_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema
from sanic.response import HTTPResponse

JSON_CONTENT_TYPE = "application/json"
# Patterns of the OpenAPI documents (ECMA-262 regular expressions, matched anywhere).
NO_NUL_PATTERN = "^[^\\u0000]*$"
# Not only whitespace, as Python's ``str.strip`` sees it: ECMA's ``\s`` lacks \x1c-\x1f, \x85.
NOT_BLANK_PATTERN = r"[^\s\x1c-\x1f\x85]"


def dumps(value: Any) -> str:
    """Serialise to JSON text; the one encoder every service uses (Sanic's ``dumps``)."""
    return orjson.dumps(value).decode()


def format_timestamp(moment: datetime) -> str:
    """Render a timestamp as ``YYYY-MM-DDThh:mm:ssZ`` in UTC (stored precision is kept)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class WireModel(BaseModel):
    """Base of response schemas: camelCase on the wire, built from attributes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


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
) -> HTTPResponse:
    """A JSON response encoded with the shared encoder."""
    return HTTPResponse(
        orjson.dumps(body),
        status=status,
        headers=dict(headers or {}),
        content_type=JSON_CONTENT_TYPE,
    )


def item_body(item: Mapping[str, Any] | WireModel) -> dict[str, Any]:
    """``{"data": item}``: the envelope of one resource."""
    return {"data": item.wire() if isinstance(item, WireModel) else dict(item)}
