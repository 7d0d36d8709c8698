"""WireEncoder: a row written by json_response reads exactly as the model's ``wire()``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import StrEnum
from typing import Any

import orjson
import pytest
from pydantic import field_serializer

from api_shared.representation import (
    TIMESTAMP_OPTIONS,
    WireEncoder,
    WireModel,
    format_timestamp,
    json_response,
)


class Colour(StrEnum):
    RED = "red"


class Thing(WireModel):
    id: uuid.UUID
    display_name: str
    note: str | None
    colour: Colour
    is_round: bool
    size: int
    made_at: datetime
    seen_at: datetime | None

    @field_serializer("made_at", "seen_at")
    def _timestamp(self, value: datetime | None) -> str | None:
        return None if value is None else format_timestamp(value)  # as every WireModel's


MOMENTS = [
    datetime(2026, 11, 22, 8, 30, 15, tzinfo=UTC),
    datetime(2026, 11, 22, 8, 30, 15, 999999, tzinfo=UTC),  # truncated, never rounded
    datetime(2026, 11, 22, 8, 30, 15),  # naive: taken as UTC
    datetime(2026, 11, 22, 9, 30, 15, tzinfo=timezone(timedelta(hours=1))),  # another zone
    datetime(2026, 1, 1, 0, 0, 0, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
]


def written_by_the_encoder(row: dict[str, Any]) -> Any:
    """The JSON a response carries for ``row``, read back."""
    body = json_response(WireEncoder(Thing)(row)).body
    assert body is not None
    return orjson.loads(body)


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_a_row_reads_as_the_models_wire_form(moment: datetime) -> None:
    row: dict[str, Any] = {
        "id": uuid.uuid4(),
        "display_name": "Ball",
        "note": None,
        "colour": "red",  # as a database gives it
        "is_round": True,
        "size": 3,
        "made_at": moment,
        "seen_at": moment,
    }

    written = written_by_the_encoder(row)

    assert written == Thing.model_validate(row).wire()
    assert written["displayName"] == "Ball"
    assert written["madeAt"].endswith("Z")


def test_an_absent_optional_timestamp_is_null() -> None:
    row = {"id": uuid.uuid4(), "display_name": "Ball", "note": "n", "colour": Colour.RED,
           "is_round": False, "size": 0, "made_at": MOMENTS[0], "seen_at": None}  # fmt: skip

    written = written_by_the_encoder(row)

    assert written == Thing.model_validate(row).wire()
    assert written["seenAt"] is None


def test_a_field_without_a_wire_form_is_refused_when_the_encoder_is_made() -> None:
    class Priced(WireModel):
        price: Decimal  # pydantic writes text, orjson would refuse it: not silently unlike

    with pytest.raises(TypeError, match=r"Priced\.price"):
        WireEncoder(Priced)


@pytest.mark.parametrize("moment", MOMENTS[:3], ids=str)
def test_json_responses_write_utc_timestamps_as_format_timestamp_does(moment: datetime) -> None:
    # Other zones are the encoder's to convert (the test above).
    assert (
        orjson.dumps(moment, option=TIMESTAMP_OPTIONS) == f'"{format_timestamp(moment)}"'.encode()
    )
