"""The catalog's domain: a book as resolvers and importers see it, and its stable ids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

MAX_TITLE_LENGTH = 500
MAX_AUTHOR_LENGTH = 300

# Books given without an id get one derived from their title and author, so importing the
# same file twice (or from several machines) never creates duplicates.
BOOK_ID_NAMESPACE = uuid.UUID("5b0e5c1e-3f4a-4b8e-9a57-7d2c6f1e0b44")


@dataclass(frozen=True, slots=True)
class Book:
    """One book of the catalog; ``id`` is a UUID string, as on the wire."""

    id: str
    title: str
    author: str


def derived_book_id(title: str, author: str) -> str:
    """The stable id of a book that was given without one."""
    return str(uuid.uuid5(BOOK_ID_NAMESPACE, f"{title.casefold()}\x1f{author.casefold()}"))
