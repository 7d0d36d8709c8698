"""Ids on the wire are UUIDs; a string that is not one names nothing.

The one rule for every id a client sends (a path segment, a GraphQL argument, a token's
``sid``): a malformed id is not a malformed request but an id no resource has, so it is
answered like any unknown id (404 NOT_FOUND, or null in GraphQL), never 400.
"""

from __future__ import annotations

from uuid import UUID


def parse_id(raw: object) -> UUID | None:
    """The UUID ``raw`` spells, or None when it is not a string spelling one (it names nothing)."""
    if not isinstance(raw, str):
        return None
    try:
        return UUID(raw)
    except ValueError:
        return None
