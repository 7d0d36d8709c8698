"""An answer to a GraphQL request: its bytes, its status, and who may keep it.

The answering step (http.answering) makes it, the response cache (http.response_cache)
keeps and replays it, the HTTP handler (routes) writes it with the headers its caching calls
for (http.cache_headers).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Caching(enum.Enum):
    """Who may keep an answer."""

    # Without errors: the response cache replays it; a GET's carries an ETag and max-age.
    REPLAYABLE = "replayable"
    # With errors: never replayed; a GET's is ``no-store`` (POST answers carry neither).
    NOT_REPLAYABLE = "not replayable"
    # A persisted-query refusal, before any document ran: ``no-store`` whatever the method.
    NO_STORE = "no-store"


# Not frozen: a frozen dataclass sets each field through object.__setattr__, several times
# the cost of a plain one, on every request executed. Nothing changes an Answer once made
# (the response cache hands the same one to every request it replays it for).
@dataclass(slots=True)
class Answer:
    body: bytes  # a GraphQL response, as JSON
    status: int
    caching: Caching
