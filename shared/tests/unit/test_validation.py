"""Input models and their errors: fields named as on the wire, NUL characters refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import field_validator
from pydantic.json_schema import SkipJsonSchema

from api_shared.errors import ValidationFailedError
from api_shared.representation import InputModel
from api_shared.validation import parse_input


class Item(InputModel):
    book_id: str
    quantity: int


class Patch(InputModel):
    # ``X | SkipJsonSchema[None]`` is a real union: pydantic tags its errors by member.
    items: list[Item] | SkipJsonSchema[None] = None
    name: str | SkipJsonSchema[None] = None
    note: str | None = None

    @field_validator("items", "name", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("cannot be null")
        return value


def fields_of(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationFailedError) as caught:
        parse_input(Patch, data)
    assert caught.value.fields is not None
    return caught.value.fields


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": 5}, {"name": "must be a string"}),
        ({"items": "x"}, {"items": "must be an array"}),
        ({"items": [{"bookId": "b", "quantity": "2"}]}, {"items.0.quantity": "must be an integer"}),
        ({"items": None}, {"items": "cannot be null"}),
    ],
)
def test_errors_name_wire_fields_never_pydantic_union_members(
    data: dict[str, Any], expected: dict[str, str]
) -> None:
    assert fields_of(data) == expected


@pytest.mark.parametrize("unknown", ["Extra", "none", "str", "list[x]"])
def test_an_unknown_field_is_named_as_sent_even_when_it_looks_like_a_union_member(
    unknown: str,
) -> None:
    assert fields_of({unknown: 1}) == {unknown: "is not allowed"}
    assert fields_of({"items": [{"bookId": "b", "quantity": 1, unknown: 1}]}) == {
        f"items.0.{unknown}": "is not allowed"
    }


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": "a\x00b"}, "name"),
        ({"note": "\x00"}, "note"),
        ({"items": [{"bookId": "b\x00", "quantity": 1}]}, "items.0.bookId"),
    ],
)
def test_a_nul_character_is_refused_in_any_string_field(data: dict[str, Any], field: str) -> None:
    # PostgreSQL text cannot store U+0000: refused by field, before any database sees it.
    assert fields_of(data) == {field: "must not contain NUL characters"}


def test_strings_without_nul_pass_unchanged() -> None:
    patch = parse_input(Patch, {"name": "tab\tand newline\n", "note": "\u2028"})

    assert (patch.name, patch.note) == ("tab\tand newline\n", "\u2028")
