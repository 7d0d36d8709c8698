"""Request and response shapes of the orders API (one per direction), separate from the ORM.

Input models are strict (``"quantity": "2"`` is invalid), refuse unknown fields, and name
read-only fields as such; every problem of a body is reported at once, by field path. The
read-only fields of each body are derived from the schemas (``OrderPublic``'s fields that the
input lacks): refused on create, accepted unchanged on replace and patch (AIP-203,
``api_shared.output_only``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar
from uuid import UUID

from pydantic import BeforeValidator, ConfigDict, Field, field_serializer, field_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.json_schema import SkipJsonSchema

from api_shared.output_only import Reasons, documented_output_only, output_only_fields
from api_shared.representation import NOT_BLANK_PATTERN, InputModel, WireModel, format_timestamp
from api_shared.validation import field_errors, not_null, validation_error
from orders_service.models import Order, OrderStatus

MAX_ITEMS = 50
MAX_QUANTITY = 100
MAX_BOOK_ID_LENGTH = 100
MAX_NOTE_LENGTH = 500

# A book of the packaged catalog (The Awakening), as the documented example of a bookId.
EXAMPLE_BOOK_ID = "3dc6d567-b05b-5923-880a-6f895eef849d"

READ_ONLY = "is read-only"
CHANGED_READ_ONLY = "is read-only: send the order's current value, or leave it out"
STATUS_ON_PUT = (
    "cannot be changed by PUT: send the current status, or leave it out, and change it with "
    'PATCH /orders/{id} {"status": ...}'
)


_STATUSES = {status.value: status for status in OrderStatus}


def _status(value: object) -> object:
    """Strict models take enums only as instances: turn a known status string into one."""
    if isinstance(value, str) and value in _STATUSES:
        return _STATUSES[value]
    if value is None:
        return value  # left to the field's own null rule
    raise ValueError(f"must be one of: {', '.join(_STATUSES)}")


Status = Annotated[OrderStatus, BeforeValidator(_status)]


class OrderItemInput(InputModel):
    # json_schema_extra documents what the validators below check.
    book_id: str = Field(
        json_schema_extra={
            "minLength": 1,
            "maxLength": MAX_BOOK_ID_LENGTH,
            "pattern": NOT_BLANK_PATTERN,
        },
        examples=[EXAMPLE_BOOK_ID],
    )
    quantity: int = Field(json_schema_extra={"minimum": 1, "maximum": MAX_QUANTITY})

    @field_validator("book_id")
    @classmethod
    def _book_id(cls, value: str) -> str:
        if not value.strip() or len(value) > MAX_BOOK_ID_LENGTH:
            raise ValueError(f"must be 1 to {MAX_BOOK_ID_LENGTH} characters")
        return value

    @field_validator("quantity")
    @classmethod
    def _quantity(cls, value: int) -> int:
        if not 1 <= value <= MAX_QUANTITY:
            raise ValueError(f"must be between 1 and {MAX_QUANTITY}")
        return value


# uniqueItems says part of "each book at most once" (duplicate_book_ids): JSON Schema compares
# whole items, so two items of one book with different quantities are left to that check.
ITEMS_SCHEMA: dict[str, Any] = {"minItems": 1, "maxItems": MAX_ITEMS, "uniqueItems": True}
NOTE_SCHEMA: dict[str, Any] = {"maxLength": MAX_NOTE_LENGTH}


def _check_items(items: list[OrderItemInput]) -> list[OrderItemInput]:
    if not 1 <= len(items) <= MAX_ITEMS:
        raise ValueError(f"must have 1 to {MAX_ITEMS} items")
    return items


def _check_note(note: str | None) -> str | None:
    if note is not None and len(note) > MAX_NOTE_LENGTH:
        raise ValueError(f"must be at most {MAX_NOTE_LENGTH} characters")
    return note


class OrderItemPublic(WireModel):
    book_id: str
    quantity: int


class OrderPublic(WireModel):
    id: UUID
    user_id: UUID
    status: OrderStatus
    items: list[OrderItemPublic]
    note: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, order: Order) -> OrderPublic:
        return cls(
            id=order.id,
            user_id=order.user_id,
            status=order.status,
            items=[
                OrderItemPublic(book_id=item["book_id"], quantity=item["quantity"])
                for item in order.items
            ],
            note=order.note,
            created_at=order.created_at,
            updated_at=order.updated_at,
        )

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class OrderCreate(InputModel):
    """``POST /orders``: ``{items, note?}``."""

    items: list[OrderItemInput] = Field(json_schema_extra=ITEMS_SCHEMA)
    note: str | None = Field(default=None, json_schema_extra=NOTE_SCHEMA)

    _items = field_validator("items")(_check_items)
    _note = field_validator("note")(_check_note)


class OrderReplace(OrderCreate):
    """``PUT /orders/{id}``: ``{items, note?}``; an absent note becomes null. The order's
    other fields may come along unchanged (a GET's body sent back)."""

    model_config = ConfigDict(json_schema_extra=documented_output_only(OrderPublic))


class OrderPatch(InputModel):
    """``PATCH /orders/{id}`` as JSON Merge Patch: absent = unchanged, null note = cleared.
    The order's other fields may come along unchanged (a GET's body sent back)."""

    model_config = ConfigDict(json_schema_extra=documented_output_only(OrderPublic))

    # SkipJsonSchema: absent is allowed, null is not.
    items: list[OrderItemInput] | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=ITEMS_SCHEMA
    )
    note: str | None = Field(default=None, json_schema_extra=NOTE_SCHEMA)
    status: Status | SkipJsonSchema[None] = None

    _null = not_null("items", "status")
    _items = field_validator("items")(_check_items)
    _note = field_validator("note")(_check_note)

    def has(self, name: str) -> bool:
        """Whether the patch names this field (even as null)."""
        return name in self.model_fields_set


InputT = TypeVar("InputT", bound=InputModel)


def parse_order_input(
    model: type[InputT], data: Mapping[str, Any], read_only: Mapping[str, str] | None = None
) -> InputT:
    """Validate a body, or VALIDATION_FAILED naming every bad field (read-only ones included)."""
    read_only = read_only or {}
    fields = {name: read_only[name] for name in data if name in read_only}
    writable = {name: value for name, value in data.items() if name not in read_only}
    parsed: InputT | None = None
    try:
        parsed = model.model_validate(writable)
    except PydanticValidationError as error:
        fields.update(field_errors(error))
    for path, reason in duplicate_book_ids(data.get("items")).items():
        fields.setdefault(path, reason)
    if fields or parsed is None:
        raise validation_error(fields)
    return parsed


def duplicate_book_ids(items: object) -> dict[str, str]:
    """``items.<i>.bookId`` of every item repeating an earlier item's book."""
    if not isinstance(items, list):
        return {}
    first_seen: dict[str, int] = {}
    duplicates: dict[str, str] = {}
    for index, item in enumerate(items):
        book_id = item.get("bookId") if isinstance(item, dict) else None
        if not isinstance(book_id, str):
            continue
        if book_id in first_seen:
            duplicates[f"items.{index}.bookId"] = (
                f"repeats items.{first_seen[book_id]}.bookId; give each book once"
            )
        else:
            first_seen[book_id] = index
    return duplicates


def _output_only(accepted: type[InputModel], reason: str, **special: str) -> Reasons:
    """``OrderPublic``'s fields that ``accepted`` lacks, each with ``reason`` (or its own)."""
    names = output_only_fields(OrderPublic, accepted)
    unknown = set(special) - set(names)
    if unknown:
        raise ValueError(f"not output-only in {accepted.__name__}: {sorted(unknown)}")
    return {name: special.get(name, reason) for name in names}


# Fields a client may read but not write, per body, and what to say about each: refused on
# create (there is nothing to compare them with), compared with the order on replace and patch.
CREATE_READ_ONLY: Reasons = _output_only(OrderCreate, READ_ONLY)
REPLACE_OUTPUT_ONLY: Reasons = _output_only(OrderReplace, CHANGED_READ_ONLY, status=STATUS_ON_PUT)
PATCH_OUTPUT_ONLY: Reasons = _output_only(OrderPatch, CHANGED_READ_ONLY)
