"""HTTP handlers of the webhooks API: parse, call the service, shape the response."""

from __future__ import annotations

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi
from sanic_ext.extensions.openapi.definitions import RequestBody

from api_shared.auth import Principal
from api_shared.openapi import (
    JSON,
    ItemEnvelope,
    PageEnvelope,
    bearer_auth,
    error_responses,
    json_body,
    page_parameters,
    path_id,
    response,
    schema_ref,
    string_enum,
)
from api_shared.paging import allowed_sorts, page_body, parse_page
from api_shared.representation import item_body, json_response
from api_shared.standing import confirmed_caller
from api_shared.validation import parse_body, parse_input, read_json_object
from webhooks_service.context import context_of
from webhooks_service.models import DeliveryStatus
from webhooks_service.schemas import (
    DeliveryPublic,
    EndpointCreate,
    EndpointPatch,
    EndpointPublic,
    EndpointWithSecret,
    SecretRotation,
)
from webhooks_service.services import (
    DEFAULT_SORT,
    DELIVERY_DEFAULT_SORT,
    DELIVERY_FILTERS,
    DELIVERY_SORTS,
    SORTS,
    WebhookService,
    require_admin,
)

webhooks = Blueprint("webhooks")

ENDPOINT_ID = path_id("endpoint_id", "The endpoint's id; one that is not a UUID names none.")
DELIVERY_ID = path_id("delivery_id", "The delivery's id; one that is not a UUID names none.")
ROTATION_BODY = RequestBody(
    {JSON: schema_ref(SecretRotation)},
    required=False,
    description="Optional: without a body, the replaced secret signs for WEBHOOK_SECRET_GRACE_S.",
)


async def _admin(request: Request) -> tuple[WebhookService, Principal]:
    """The service and the caller, once the caller is known to be an admin now (401, then
    403): a token's admin claim is confirmed with users-service (api_shared.standing)."""
    context = context_of(request)
    caller = await confirmed_caller(request, context.standing, writes=True)
    require_admin(caller)
    return context.webhooks, caller


def _query(request: Request) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = request.get_query_args(keep_blank_values=True)
    return pairs


@webhooks.post("/api/webhooks")
@openapi.definition(operation="createWebhook", tag="webhooks", body=json_body(EndpointCreate))
@response(201, ItemEnvelope[EndpointWithSecret], "The endpoint and its secret (shown once)")
@error_responses(403, body=True)
@bearer_auth()
async def create_webhook(request: Request) -> HTTPResponse:
    """Register an endpoint (admins); the answer holds its signing secret, shown only this once."""
    service, caller = await _admin(request)
    endpoint, secret = await service.create(parse_body(request, EndpointCreate), caller)
    return json_response(
        item_body(EndpointWithSecret.with_secret(endpoint, secret)),
        status=201,
        headers={"Location": f"/api/webhooks/{endpoint.id}"},
    )


@webhooks.get("/api/webhooks")
@openapi.definition(
    operation="listWebhooks",
    tag="webhooks",
    parameter=page_parameters(allowed_sorts(SORTS), DEFAULT_SORT),
)
@response(200, PageEnvelope[EndpointPublic], "A page of endpoints")
@error_responses(400, 403)
@bearer_auth()
async def list_webhooks(request: Request) -> HTTPResponse:
    """Every endpoint, paged (secrets are never listed)."""
    service, _ = await _admin(request)
    page = parse_page(_query(request), sorts=SORTS, default_sort=DEFAULT_SORT)
    rows, total = await service.list_endpoints(page)
    return json_response(page_body([EndpointPublic.of(row).wire() for row in rows], total, page))


@webhooks.get("/api/webhooks/<endpoint_id:str>")
@openapi.definition(operation="getWebhook", tag="webhooks", parameter=ENDPOINT_ID)
@response(200, ItemEnvelope[EndpointPublic], "The endpoint")
@error_responses(403, 404)
@bearer_auth()
async def get_webhook(request: Request, endpoint_id: str) -> HTTPResponse:
    """One endpoint (without its secret)."""
    service, _ = await _admin(request)
    return json_response(item_body(EndpointPublic.of(await service.get(endpoint_id))))


@webhooks.patch("/api/webhooks/<endpoint_id:str>")
@openapi.definition(
    operation="patchWebhook", tag="webhooks", parameter=ENDPOINT_ID, body=json_body(EndpointPatch)
)
@response(200, ItemEnvelope[EndpointPublic], "The changed endpoint")
@error_responses(403, 404, body=True)
@bearer_auth()
async def patch_webhook(request: Request, endpoint_id: str) -> HTTPResponse:
    """Change url, eventTypes, description or enabled; enabling makes the caller the owner."""
    service, caller = await _admin(request)
    endpoint = await service.patch(endpoint_id, parse_body(request, EndpointPatch), caller)
    return json_response(item_body(EndpointPublic.of(endpoint)))


@webhooks.delete("/api/webhooks/<endpoint_id:str>")
@openapi.definition(operation="deleteWebhook", tag="webhooks", parameter=ENDPOINT_ID)
@response(204, None, "Deleted, with its deliveries")
@error_responses(403, 404)
@bearer_auth()
async def delete_webhook(request: Request, endpoint_id: str) -> HTTPResponse:
    """Delete an endpoint and its deliveries (pending ones are not sent)."""
    service, _ = await _admin(request)
    await service.delete(endpoint_id)
    return empty()


@webhooks.post("/api/webhooks/<endpoint_id:str>/rotate-secret")
@openapi.definition(
    operation="rotateWebhookSecret", tag="webhooks", parameter=ENDPOINT_ID, body=ROTATION_BODY
)
@response(200, ItemEnvelope[EndpointWithSecret], "The endpoint and its new secret (shown once)")
@error_responses(403, 404, body=True)
@bearer_auth()
async def rotate_webhook_secret(request: Request, endpoint_id: str) -> HTTPResponse:
    """Replace the signing secret; the old one signs beside it for a grace period."""
    service, _ = await _admin(request)
    rotation = (
        parse_input(SecretRotation, read_json_object(request)) if request.body else SecretRotation()
    )
    endpoint, secret = await service.rotate_secret(endpoint_id, rotation)
    return json_response(item_body(EndpointWithSecret.with_secret(endpoint, secret)))


@webhooks.get("/api/webhooks/<endpoint_id:str>/deliveries")
@openapi.definition(
    operation="listWebhookDeliveries",
    tag="webhooks",
    parameter=[
        ENDPOINT_ID,
        *page_parameters(
            allowed_sorts(DELIVERY_SORTS),
            DELIVERY_DEFAULT_SORT,
            {"status": string_enum(DeliveryStatus)},
        ),
    ],
)
@response(200, PageEnvelope[DeliveryPublic], "A page of the endpoint's deliveries")
@error_responses(400, 403, 404)
@bearer_auth()
async def list_webhook_deliveries(request: Request, endpoint_id: str) -> HTTPResponse:
    """The endpoint's deliveries, newest first by default, each with every attempt."""
    service, _ = await _admin(request)
    page = parse_page(
        _query(request),
        sorts=DELIVERY_SORTS,
        default_sort=DELIVERY_DEFAULT_SORT,
        filters=DELIVERY_FILTERS,
    )
    rows, total = await service.list_deliveries(endpoint_id, page)
    items = [DeliveryPublic.of(delivery, attempts).wire() for delivery, attempts in rows]
    return json_response(page_body(items, total, page))


@webhooks.post("/api/webhooks/<endpoint_id:str>/deliveries/<delivery_id:str>/replay")
@openapi.definition(
    operation="replayWebhookDelivery", tag="webhooks", parameter=[ENDPOINT_ID, DELIVERY_ID]
)
@response(202, ItemEnvelope[DeliveryPublic], "The delivery, pending again and due now")
@error_responses(403, 404, 409)
@bearer_auth()
async def replay_webhook_delivery(
    request: Request, endpoint_id: str, delivery_id: str
) -> HTTPResponse:
    """Send a failed (or delivered) delivery again; a pending one is 409 INVALID_STATE."""
    service, _ = await _admin(request)
    delivery, attempts = await service.replay(endpoint_id, delivery_id)
    return json_response(item_body(DeliveryPublic.of(delivery, attempts)), status=202)
