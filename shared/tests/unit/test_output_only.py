"""Output-only fields (AIP-203): found from the schemas, set aside, compared as JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

import pytest
from pydantic import ConfigDict, field_serializer

from api_shared.errors import ValidationFailedError
from api_shared.openapi.dialect import component_schemas
from api_shared.output_only import (
    ACCEPTED_UNCHANGED,
    documented_output_only,
    output_only_fields,
    split_output_only,
)
from api_shared.representation import InputModel, WireModel, format_timestamp


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class ThingPublic(WireModel):
    id: UUID
    colour: Colour
    name: str
    created_at: datetime

    @field_serializer("created_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class ThingReplace(InputModel):
    model_config = ConfigDict(json_schema_extra=documented_output_only(ThingPublic))

    name: str


REASONS = {name: "is read-only" for name in output_only_fields(ThingPublic, ThingReplace)}
THING = ThingPublic(
    id=UUID("0b7e7f8e-53f5-4f1e-9a55-6b0f2c3c9d11"),
    colour=Colour.RED,
    name="chair",
    created_at=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
).wire()


def test_the_output_only_fields_are_the_wire_ones_the_input_lacks_in_wire_order() -> None:
    assert output_only_fields(ThingPublic, ThingReplace) == ("id", "colour", "createdAt")


def test_a_body_read_back_unchanged_passes_and_keeps_only_its_writable_fields() -> None:
    writable, given = split_output_only({**THING, "name": "table"}, REASONS)

    given.check(THING)
    assert writable == {"name": "table"}
    assert dict(given.given) == {key: THING[key] for key in ("id", "colour", "createdAt")}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id", "0B7E7F8E-53F5-4F1E-9A55-6B0F2C3C9D11"),  # the same id, not as written
        ("colour", "blue"),
        ("createdAt", "2026-01-02T03:04:05.678901Z"),  # the same moment, not as written
        ("createdAt", None),
    ],
)
def test_a_changed_output_only_field_is_refused_by_name(field: str, value: Any) -> None:
    _, given = split_output_only({**THING, field: value}, REASONS)

    with pytest.raises(ValidationFailedError) as caught:
        given.check(THING)
    assert caught.value.fields == {field: "is read-only"}


def test_values_compare_as_json_not_as_python() -> None:
    _, given = split_output_only({"colour": 1}, {"colour": "is read-only"})

    assert given.differing({"colour": True}) == {"colour": "is read-only"}
    assert given.differing({"colour": 1.0}) == {"colour": "is read-only"}
    assert given.differing({"colour": 1}) == {}
    assert split_output_only({"id": 2**70}, REASONS)[1].differing({"id": 2**70}) == {
        "id": "is read-only"
    }


def test_the_document_names_them_as_optional_read_only_properties_of_the_wire_type() -> None:
    schema = component_schemas(ThingReplace)["ThingReplace"]

    assert schema["required"] == ["name"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["colour"] == {
        "enum": ["red", "blue"],
        "type": "string",
        "readOnly": True,
        "description": ACCEPTED_UNCHANGED,
    }
    assert schema["properties"]["id"]["format"] == "uuid"
    assert schema["properties"]["createdAt"]["pattern"].endswith("Z$")
