"""How orders are answered over HTTP: the envelope, the ETag, the created and replayed answers."""

from __future__ import annotations

from collections.abc import Sequence

from sanic.response import HTTPResponse

from api_shared.events.history import History
from api_shared.paging import CursorRequest, PageRequest, cursor_body, page_body
from api_shared.representation import item_body, json_response
from orders_service.models import Order
from orders_service.ports import StoredResponse
from orders_service.preconditions import etag
from orders_service.schemas import OrderPublic

REPLAYED_HEADER = "Idempotent-Replayed"


def created_response(order: Order) -> StoredResponse:
    """What ``POST /orders`` answers (and stores for an idempotent repeat)."""
    return StoredResponse(
        status=201,
        body=item_body(OrderPublic.of(order)),
        headers={"Location": f"/orders/{order.id}", "ETag": etag(order.id, order.version)},
    )


def creation_response(stored: StoredResponse, *, replayed: bool) -> HTTPResponse:
    """A create's answer as stored; a replay says so in ``Idempotent-Replayed``."""
    headers = dict(stored.headers)
    if replayed:
        headers[REPLAYED_HEADER] = "true"
    return json_response(stored.body, status=stored.status, headers=headers)


def order_response(order: Order) -> HTTPResponse:
    """One order, with its ETag."""
    return json_response(
        item_body(OrderPublic.of(order)), headers={"ETag": etag(order.id, order.version)}
    )


def page_response(rows: Sequence[Order], total: int, page: PageRequest) -> HTTPResponse:
    return json_response(page_body([OrderPublic.of(row).wire() for row in rows], total, page))


def history_response(history: History, cursor: CursorRequest) -> HTTPResponse:
    """An order's events, each its document as published, in a cursor page."""
    return json_response(
        cursor_body(
            history.events, cursor, next_after=history.last_sequence, has_more=history.has_more
        )
    )
