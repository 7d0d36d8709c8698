"""Reading request bodies: JSON objects in, typed input models out, contract errors otherwise;
and the validators input models share (``not_null``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, field_validator
from pydantic import ValidationError as PydanticValidationError
from sanic import Request

from api_shared.errors import MalformedJsonError, ValidationFailedError

ModelT = TypeVar("ModelT", bound=BaseModel)

# Pydantic's messages are written for Python developers; these read better to API clients.
_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not allowed",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be a boolean",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "string_too_short": "is too short",
    "string_too_long": "is too long",
    "too_short": "has too few items",
    "too_long": "has too many items",
    "literal_error": "is not one of the allowed values",
    "enum": "is not one of the allowed values",
}


def read_json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object, or MALFORMED_JSON."""
    try:
        value = orjson.loads(request.body or b"")
    except orjson.JSONDecodeError:
        raise MalformedJsonError("The request body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise MalformedJsonError("The request body must be a JSON object.")
    return value


# Pydantic names the member of a union a value failed to match in the error's location
# (``status.function-before[...]``, ``name.str``, ``items.list[Item].0``): not wire names.
_UNION_MEMBER = re.compile(r"none|str|int|float|bool|bytes|list|dict|[A-Z].*|.*\[.*")


def field_errors(error: PydanticValidationError) -> dict[str, str]:
    """Map pydantic's errors to ``{field: message}`` using wire (camelCase) field paths.

    Union member tags are dropped from the paths; the first message for a field is kept (the
    members are tried in order, so that is the one about the type a client meant to send).
    """
    fields: dict[str, str] = {}
    for item in error.errors(include_url=False, include_input=False):
        loc = item["loc"]
        # An unknown field's name is the client's own: never mistaken for a union member.
        last = len(loc) - 1 if item["type"] == "extra_forbidden" else len(loc)
        parts = [
            str(part)
            for index, part in enumerate(loc)
            if index >= last or not (isinstance(part, str) and _UNION_MEMBER.fullmatch(part))
        ]
        if len(parts) < len(loc) and item["type"] == "none_required":
            continue  # the null branch of an optional field; the other branch says why
        path = ".".join(parts) or "body"
        message = _MESSAGES.get(item["type"])
        if message is None:
            # Custom validators raise ValueError("..."); pydantic prefixes "Value error, ".
            message = str(item["msg"]).removeprefix("Value error, ")
        fields.setdefault(path, message)
    return fields


def validation_error(fields: dict[str, str]) -> ValidationFailedError:
    """A VALIDATION_FAILED error whose message names the first field."""
    first, reason = next(iter(fields.items()))
    return ValidationFailedError(f"{first} {reason}", fields=fields)


def parse_input(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """Validate a JSON object against an input model, or VALIDATION_FAILED naming each field."""
    try:
        return model.model_validate(data)
    except PydanticValidationError as error:
        raise validation_error(field_errors(error)) from None


def parse_body(request: Request, model: type[ModelT]) -> ModelT:
    """``read_json_object`` then ``parse_input``: the usual way a handler reads its body."""
    return parse_input(model, read_json_object(request))


def not_null(*fields: str, message: str = "cannot be null") -> Callable[[object], object]:
    """A validator of an input model's ``fields`` that refuses null with ``message``:
    ``_null = not_null("items", "status")`` in the model's body.

    For fields a client may leave out but not send as null (JSON Merge Patch reads null as
    "remove", and these cannot be removed). It runs only for the values sent: an absent
    field keeps its None default.
    """

    def refuse_null(value: object) -> object:
        if value is None:
            raise ValueError(message)
        return value

    return field_validator(*fields, mode="before")(refuse_null)
