"""A malformed id names nothing: it parses to None, never to an error."""

from __future__ import annotations

from uuid import UUID

import pytest

from api_shared.ids import parse_id

AN_ID = "5b0e5c1e-3f4a-4b8e-9a57-7d2c6f1e0b44"


def test_a_uuid_is_parsed() -> None:
    assert parse_id(AN_ID) == UUID(AN_ID)


@pytest.mark.parametrize(
    "raw", ["", "not-a-uuid", AN_ID + "0", "1" * 10_000, "\x00", None, 42, b"x" * 16]
)
def test_anything_else_names_nothing(raw: object) -> None:
    assert parse_id(raw) is None
