"""Output-only fields in request bodies (Google AIP-203): what a GET returned may be sent back.

A representation carries fields the server alone sets (ids, timestamps, a status changed
another way). A client that reads a resource, edits it and writes it back sends them too, so
a write accepts them when they equal the resource's current values, and ignores them; one
that differs would change what the client cannot change: VALIDATION_FAILED naming it.

The resource service says which fields these are (``output_only_fields``: its wire schema's
fields that an input schema lacks) and what to say about each. ``split_output_only`` takes
them out of a body before the body is validated; ``OutputOnly.check`` compares them, once the
resource is read, with its representation as the service writes it (timestamps and ids as
text), so that an unmodified GET body always passes. The rules are docs/api.md#orders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel

from api_shared.openapi.dialect import component_schemas
from api_shared.validation import validation_error

Reasons = Mapping[str, str]
"""Output-only fields by wire name, each with what to say when a body changes it."""

ACCEPTED_UNCHANGED = (
    "Output only: accepted when it equals the current value, and ignored; a different value "
    "is 400 VALIDATION_FAILED."
)


def _aliases(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def output_only_fields(wire: type[BaseModel], accepted: type[BaseModel]) -> tuple[str, ...]:
    """The wire names of ``wire``'s fields that ``accepted`` (an input schema) lacks, in
    ``wire``'s order."""
    writable = set(_aliases(accepted))
    return tuple(alias for alias in _aliases(wire) if alias not in writable)


@dataclass(frozen=True, slots=True)
class OutputOnly:
    """The output-only fields a body carried (wire name → value as sent), and the reasons."""

    given: Mapping[str, Any] = field(default_factory=dict)
    reasons: Reasons = field(default_factory=dict)

    def differing(self, current: Mapping[str, Any]) -> dict[str, str]:
        """Each given field whose value is not ``current``'s (a representation), with why."""
        return {
            name: self.reasons[name]
            for name, value in self.given.items()
            if not _same(value, current.get(name))
        }

    def check(self, current: Mapping[str, Any]) -> None:
        """VALIDATION_FAILED naming each given field that differs from ``current`` (the
        resource's representation, as the service writes it)."""
        fields = self.differing(current)
        if fields:
            raise validation_error(fields)


NONE_GIVEN = OutputOnly()


def split_output_only(
    body: Mapping[str, Any], reasons: Reasons
) -> tuple[dict[str, Any], OutputOnly]:
    """The body without its output-only fields (to validate), and those fields."""
    writable = {name: value for name, value in body.items() if name not in reasons}
    given = {name: value for name, value in body.items() if name in reasons}
    return writable, OutputOnly(given, reasons)


def _same(sent: Any, current: Any) -> bool:
    """Equal as JSON: ``1`` is not ``true`` nor ``1.0``, ``"a"`` is not ``"A"``."""
    try:
        return orjson.dumps(sent, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            current, option=orjson.OPT_SORT_KEYS
        )
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: no representation has one
        return False


def documented_output_only(
    wire: type[BaseModel], description: str = ACCEPTED_UNCHANGED
) -> Callable[[dict[str, Any], type[Any]], None]:
    """A ``json_schema_extra`` for an input model that accepts ``wire``'s output-only fields
    unchanged: each becomes an optional ``readOnly`` property, described as such, of the type
    the representation has (OpenAPI 3.0: such a property SHOULD NOT be sent, may be)."""

    def extra(schema: dict[str, Any], model: type[Any]) -> None:
        components = component_schemas(wire, response=True)
        properties = components[wire.__name__]["properties"]
        added = schema.setdefault("properties", {})
        for name in output_only_fields(wire, model):
            prop = dict(properties[name])
            if "$ref" in prop:  # inline it: the input's document need not hold the component
                prop = dict(components[prop["$ref"].rpartition("/")[2]])
                prop.pop("title", None)
            added[name] = {**prop, "readOnly": True, "description": description}

    return extra
