"""How endpoints and their deliveries are answered over HTTP: the envelopes, statuses and
headers."""

from __future__ import annotations

from collections.abc import Sequence

from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import item_body, json_response
from webhooks_service.endpoints.schemas import DeliveryPublic, EndpointPublic, EndpointWithSecret
from webhooks_service.models import Attempt, Delivery, Endpoint


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
