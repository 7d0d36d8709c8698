"""How endpoints, deliveries and logged events are answered over HTTP: the envelopes,
statuses and headers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import item_body, json_response
from webhooks_service.models import Attempt, Delivery, Endpoint, LoggedEvent
from webhooks_service.schemas import DeliveryPublic, EndpointPublic, EndpointWithSecret


def created_endpoint_response(endpoint: Endpoint, secret: str) -> HTTPResponse:
    """A registration's answer: 201, where the endpoint lives, and its secret (shown once)."""
    return json_response(
        item_body(EndpointWithSecret.with_secret(endpoint, secret)),
        status=201,
        headers={"Location": f"/api/webhooks/{endpoint.id}"},
    )


def rotated_endpoint_response(endpoint: Endpoint, secret: str) -> HTTPResponse:
    """A rotation's answer: the endpoint and its new secret (shown once)."""
    return json_response(item_body(EndpointWithSecret.with_secret(endpoint, secret)))


def endpoint_response(endpoint: Endpoint) -> HTTPResponse:
    """One endpoint, without its secret."""
    return json_response(item_body(EndpointPublic.of(endpoint)))


def endpoints_page_response(
    rows: Sequence[Endpoint], total: int, page: PageRequest
) -> HTTPResponse:
    return json_response(page_body([EndpointPublic.of(row).wire() for row in rows], total, page))


def deliveries_page_response(
    rows: Sequence[tuple[Delivery, list[Attempt]]], total: int, page: PageRequest
) -> HTTPResponse:
    """A page of deliveries, each with every attempt."""
    items = [DeliveryPublic.of(delivery, attempts).wire() for delivery, attempts in rows]
    return json_response(page_body(items, total, page))


def replayed_delivery_response(delivery: Delivery, attempts: list[Attempt]) -> HTTPResponse:
    """202: the delivery is pending again and due now."""
    return json_response(item_body(DeliveryPublic.of(delivery, attempts)), status=202)


def queued_delivery_response(delivery: Delivery, attempts: list[Attempt]) -> HTTPResponse:
    """202: a new delivery (a test event's) is pending, due now."""
    return json_response(item_body(DeliveryPublic.of(delivery, attempts)), status=202)


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
