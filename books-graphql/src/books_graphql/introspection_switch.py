"""Introspection switched off (``BOOKS_INTROSPECTION``, off by default in production).

A document that selects ``__schema`` or ``__type``, at its root or through a fragment, is
refused after validation, as Apollo Server does with ``introspection: false``: a request
error with ``extensions.code`` ``GRAPHQL_VALIDATION_FAILED`` (status 200 with
``application/json``, 400 with ``application/graphql-response+json``, no ``data``).
``__typename`` is not introspection of the schema and stays allowed. Switching it off hides
the schema from casual discovery; the limits (``limits``, ``request_work``) are what bound
the cost of any query, introspection included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tartiflette.language.ast import FieldNode
from tartiflette.types.exceptions.tartiflette import TartifletteError

INTROSPECTION_FIELDS = frozenset({"__schema", "__type"})
MESSAGE = (
    "GraphQL introspection is not allowed on this server, but the query contained "
    "__schema or __type."
)
CODE = "GRAPHQL_VALIDATION_FAILED"


def introspection_refusal(document: Any) -> TartifletteError | None:
    """The error for a validated ``document`` (Tartiflette's DocumentNode) that introspects,
    located at each such field; None when it does not."""
    fields = list(_introspection_fields(document))
    if not fields:
        return None
    return TartifletteError(
        MESSAGE, locations=[field.location for field in fields], extensions={"code": CODE}
    )


def _introspection_fields(document: Any) -> Iterator[FieldNode]:
    """Every ``__schema``/``__type`` field of every operation and fragment of ``document``.

    Fragments are walked as definitions rather than where they are spread, so each is walked
    once (validation has refused cycles and unused fragments by now).
    """
    pending = [definition.selection_set for definition in document.definitions]
    while pending:
        selection_set = pending.pop()
        if selection_set is None:
            continue
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode) and selection.name.value in INTROSPECTION_FIELDS:
                yield selection
            pending.append(getattr(selection, "selection_set", None))
