"""How the event log's events are answered over HTTP: each its stored document, in the
envelopes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import item_body, json_response
from webhooks_service.models import LoggedEvent


def _document(event: LoggedEvent) -> dict[str, Any]:
    """The event as delivered: its stored document (redacted, if its user was deleted)."""
    document: dict[str, Any] = orjson.loads(event.payload)
    return document


def events_page_response(
    rows: Sequence[LoggedEvent], total: int, page: PageRequest
) -> HTTPResponse:
    return json_response(page_body([_document(row) for row in rows], total, page))


def event_response(event: LoggedEvent) -> HTTPResponse:
    return json_response(item_body(_document(event)))
