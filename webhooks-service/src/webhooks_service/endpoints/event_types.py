"""Which event types exist, and which an endpoint's ``eventTypes`` entries select.

An entry is a type (``orders.order.shipped``), a prefix pattern ending in ``.*``
(``orders.*``, ``orders.order.*``), or ``*`` for every type. A pattern must select at least
one known type, so that a misspelt entry is refused at once rather than never matching.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhooks_service.endpoints.own_events import DISABLED_EVENT_TYPE

# What users-service and orders-service publish to JetStream, read from their AsyncAPI
# snapshots into a generated module (the gateway's AsyncAPI document describes exactly these).
from webhooks_service.endpoints.published_types import PUBLISHED_TYPES as PUBLISHED_TYPES

# Made by the dispatcher itself, for the owner's other endpoints (own_events); described in
# docs/api.md#webhooks, never published to JetStream.
OWN_TYPES: tuple[str, ...] = (DISABLED_EVENT_TYPE,)
KNOWN_TYPES: tuple[str, ...] = (*PUBLISHED_TYPES, *OWN_TYPES)
EVERYTHING = "*"
MAX_ENTRIES = 50


def _patterns() -> tuple[str, ...]:
    """``*`` and every ``prefix.*`` that selects a known type (``orders.*``, ``orders.order.*``)."""
    prefixes = {
        ".".join(parts[:length])
        for parts in (event_type.split(".") for event_type in KNOWN_TYPES)
        for length in range(1, len(parts))
    }
    return (EVERYTHING, *sorted(f"{prefix}.*" for prefix in prefixes))


ENTRIES: tuple[str, ...] = (*KNOWN_TYPES, *_patterns())
"""Every valid ``eventTypes`` entry (the OpenAPI document lists them)."""


def selects(entry: str, event_type: str) -> bool:
    """Whether one ``eventTypes`` entry selects ``event_type``."""
    if entry == EVERYTHING:
        return True
    if entry.endswith(".*"):
        return event_type.startswith(entry[:-1])
    return entry == event_type


def matches(entries: Iterable[str], event_type: str) -> bool:
    return any(selects(entry, event_type) for entry in entries)


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` is not a valid ``eventTypes`` entry; None when it is."""
    if not any(selects(entry, known) for known in KNOWN_TYPES):
        return f"is not a known event type or a pattern selecting one ({', '.join(KNOWN_TYPES)})"
    return None
