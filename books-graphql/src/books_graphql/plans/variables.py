"""Variable values for compiled plans: the plain cases only, anything else to Tartiflette.

A plan must answer exactly as Tartiflette would. Rather than copy every rule of input
coercion (and its error messages), a plan accepts the values whose coercion cannot differ —
a JSON string for ``String``/``ID``, a JSON boolean for ``Boolean``, a 32-bit integer for
``Int``, a finite float for ``Float``, null for a nullable type, an absent value with a
literal default — and reports anything else as ``None``, which sends the request to
Tartiflette: it answers the odd cases, errors included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tartiflette.language.ast import (
    BooleanValueNode,
    NamedTypeNode,
    NonNullTypeNode,
    NullValueNode,
    StringValueNode,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_ABSENT = object()


class UnsupportedError(Exception):
    """The document uses something plans do not cover: Tartiflette executes it."""


@dataclass(frozen=True, slots=True)
class VariableSpec:
    """One declared variable: its scalar type, nullability and literal default."""

    name: str
    type_name: str
    non_null: bool
    default: Any = _ABSENT

    @classmethod
    def from_node(cls, node: Any) -> VariableSpec:
        type_node, non_null = node.type, False
        if isinstance(type_node, NonNullTypeNode):
            type_node, non_null = type_node.type, True
        if not isinstance(type_node, NamedTypeNode) or type_node.name.value not in _ACCEPTS:
            raise UnsupportedError("variable of a list or non-scalar type")
        default = _ABSENT if node.default_value is None else _literal(node.default_value)
        return cls(node.variable.name.value, type_node.name.value, non_null, default)


def coerce_variables(
    specs: tuple[VariableSpec, ...], provided: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The operation's variable values, or None when Tartiflette must decide."""
    values: dict[str, Any] = {}
    given = provided or {}
    for spec in specs:
        value = given.get(spec.name, _ABSENT)
        if value is _ABSENT:
            if spec.default is not _ABSENT:
                values[spec.name] = spec.default
            elif spec.non_null:
                return None  # a missing required value: Tartiflette's error
            continue
        if value is None:
            if spec.non_null:
                return None
            values[spec.name] = None
        elif _ACCEPTS[spec.type_name](value):
            values[spec.name] = value
        else:
            return None
    return values


def _literal(node: Any) -> Any:
    """A default value: only literals whose meaning is unambiguous."""
    if isinstance(node, NullValueNode):
        return None
    if isinstance(node, BooleanValueNode) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, StringValueNode) and isinstance(node.value, str):
        return node.value
    raise UnsupportedError("default value other than a boolean, a string or null")


def _is_int(value: Any) -> bool:
    return type(value) is int and INT_MIN <= value <= INT_MAX


def _is_float(value: Any) -> bool:
    return type(value) is float and math.isfinite(value)


_ACCEPTS = {
    "String": lambda value: type(value) is str,
    "ID": lambda value: type(value) is str,
    "Boolean": lambda value: type(value) is bool,
    "Int": _is_int,
    "Float": _is_float,
}
