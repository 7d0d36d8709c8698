"""HTTP handlers of the endpoint API (``/api/webhooks…``): parse, call the service, shape the
response."""

from __future__ import annotations

from typing import Protocol

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi
from sanic_ext.extensions.openapi.definitions import RequestBody

import api_shared.openapi as spec
from api_shared.auth import Access, Principal, Scope
from api_shared.deprecation import deprecated_alias
from api_shared.paging import parse_request_page
from api_shared.standing import Confirming, confirmed_caller
from api_shared.validation import parse_body, parse_input, read_json_object
from webhooks_service.endpoints.presenter import (
    created_endpoint_response,
    deliveries_page_response,
    endpoint_response,
    endpoints_page_response,
    queued_delivery_response,
    replayed_delivery_response,
    rotated_endpoint_response,
)
from webhooks_service.endpoints.schemas import (
    DeliveryPublic,
    EndpointCreate,
    EndpointPatch,
    EndpointPublic,
    EndpointWithSecret,
    SecretRotation,
)
from webhooks_service.endpoints.services import (
    DEFAULT_SORT,
    DELIVERY_DEFAULT_SORT,
    DELIVERY_FILTERS,
    DELIVERY_SORTS,
    SORTS,
    WebhookService,
)
from webhooks_service.models import DeliveryStatus

webhooks = Blueprint("webhooks")

ENDPOINT_ID = spec.path_id("endpoint_id", "The endpoint's id; one that is not a UUID names none.")
DELIVERY_ID = spec.path_id("delivery_id", "The delivery's id; one that is not a UUID names none.")
ROTATION_BODY = RequestBody(
    {spec.JSON: spec.schema_ref(SecretRotation)},
    required=False,
    description="Optional: without a body, the replaced secret signs for WEBHOOK_SECRET_GRACE_S.",
)


# Who may call every route here: an API key needs webhooks:manage, and every caller is
# confirmed with users-service (api_shared.standing: an active account, and whether it is
# an admin now). Handlers acting on one endpoint look it up (404 when the caller does not
# manage it) before they read the request's body or query, so that a refused caller learns
# nothing about what they sent.
MANAGE_WEBHOOKS = Access(Scope.WEBHOOKS_MANAGE, confirm=True)


class EndpointsContext(Confirming, Protocol):
    """What these handlers read of the app's context (``webhooks_service.context.Context``):
    named here, so that the package never imports the context that composes it."""

    @property
    def webhooks(self) -> WebhookService: ...


def _webhooks(request: Request) -> WebhookService:
    context: EndpointsContext = request.app.ctx.context
    return context.webhooks


@webhooks.post("/api/webhooks")
@openapi.definition(operation="createWebhook", tag="webhooks", body=spec.json_body(EndpointCreate))
@spec.response(
    201, spec.ItemEnvelope[EndpointWithSecret], "The endpoint and its secret (shown once)"
)
@spec.error_responses(403, body=True)
@spec.bearer_auth()
async def create_webhook(request: Request) -> HTTPResponse:
    """Register an endpoint, owned by the caller; the answer holds its secret, shown once.

    audience all (every user's events) is for admins: 403 FORBIDDEN for anyone else, before
    the rest of the body is looked at."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    service = _webhooks(request)
    document = read_json_object(request)
    service.audience_for(caller, document.get("audience"))  # 403 before the rest is looked at
    endpoint, secret = await service.create(caller, parse_input(EndpointCreate, document))
    return created_endpoint_response(endpoint, secret)


@webhooks.get("/api/webhooks")
@spec.list_operation(
    "listWebhooks",
    "webhooks",
    EndpointPublic,
    "A page of endpoints",
    sorts=SORTS,
    default_sort=DEFAULT_SORT,
    errors=(403,),
)
async def list_webhooks(request: Request) -> HTTPResponse:
    """The endpoints the caller manages, paged (secrets are never listed).

    An admin's list holds every endpoint; anyone else's, their own."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    page = parse_request_page(request, sorts=SORTS, default_sort=DEFAULT_SORT)
    rows, total = await _webhooks(request).list_endpoints(caller, page)
    return endpoints_page_response(rows, total, page)


@webhooks.get("/api/webhooks/<endpoint_id:str>")
@spec.get_operation(
    "getWebhook", "webhooks", EndpointPublic, "The endpoint", path=[ENDPOINT_ID], errors=(403, 404)
)
async def get_webhook(request: Request, endpoint_id: str) -> HTTPResponse:
    """One endpoint (without its secret)."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    return endpoint_response(await _webhooks(request).get(caller, endpoint_id))


@webhooks.patch("/api/webhooks/<endpoint_id:str>")
@spec.change_operation(
    "patchWebhook",
    "webhooks",
    EndpointPublic,
    "The changed endpoint",
    body=spec.json_body(EndpointPatch),
    path=[ENDPOINT_ID],
    errors=(403, 404),
)
async def patch_webhook(request: Request, endpoint_id: str) -> HTTPResponse:
    """Change url, eventTypes, description or enabled.

    Enabling an all endpoint makes the caller (an admin) its owner; an owner endpoint keeps
    its owner."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    service = _webhooks(request)
    await service.get(caller, endpoint_id)  # 404 before the body is read
    endpoint = await service.patch(caller, endpoint_id, parse_body(request, EndpointPatch))
    return endpoint_response(endpoint)


@webhooks.delete("/api/webhooks/<endpoint_id:str>")
@openapi.definition(operation="deleteWebhook", tag="webhooks", parameter=ENDPOINT_ID)
@spec.response(204, None, "Deleted, with its deliveries")
@spec.error_responses(403, 404)
@spec.bearer_auth()
async def delete_webhook(request: Request, endpoint_id: str) -> HTTPResponse:
    """Delete an endpoint and its deliveries (pending ones are not sent)."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    await _webhooks(request).delete(caller, endpoint_id)
    return empty()


@webhooks.post("/api/webhooks/<endpoint_id:str>/secrets")
@openapi.definition(
    operation="createWebhookSecret", tag="webhooks", parameter=ENDPOINT_ID, body=ROTATION_BODY
)
@spec.response(
    200, spec.ItemEnvelope[EndpointWithSecret], "The endpoint and its new secret (shown once)"
)
@spec.error_responses(403, 404, body=True)
@spec.bearer_auth()
async def create_webhook_secret(request: Request, endpoint_id: str) -> HTTPResponse:
    """A new signing secret replaces the current one, which signs beside it for a grace
    period."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    return await _rotate_secret(request, caller, endpoint_id)


@webhooks.post("/api/webhooks/<endpoint_id:str>/rotate-secret")
@openapi.definition(
    operation="rotateWebhookSecret", tag="webhooks", parameter=ENDPOINT_ID, body=ROTATION_BODY
)
@spec.response(
    200, spec.ItemEnvelope[EndpointWithSecret], "The endpoint and its new secret (shown once)"
)
@spec.error_responses(403, 404, body=True)
@spec.bearer_auth()
@deprecated_alias("/api/webhooks/{endpoint_id}/secrets")
async def rotate_webhook_secret(request: Request, endpoint_id: str) -> HTTPResponse:
    """Deprecated: `POST /api/webhooks/{id}/secrets` replaces it, with the same answer."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    return await _rotate_secret(request, caller, endpoint_id)


async def _rotate_secret(request: Request, caller: Principal, endpoint_id: str) -> HTTPResponse:
    service = _webhooks(request)
    await service.get(caller, endpoint_id)  # 404 before the body is read
    rotation = (
        parse_input(SecretRotation, read_json_object(request)) if request.body else SecretRotation()
    )
    endpoint, secret = await service.rotate_secret(caller, endpoint_id, rotation)
    return rotated_endpoint_response(endpoint, secret)


@webhooks.post("/api/webhooks/<endpoint_id:str>/test-events")
@openapi.definition(operation="createWebhookTestEvent", tag="webhooks", parameter=ENDPOINT_ID)
@spec.response(
    202,
    spec.ItemEnvelope[DeliveryPublic],
    "The delivery of a webhooks.endpoint.tested event, pending and due now",
)
@spec.error_responses(403, 404, 409)
@spec.bearer_auth()
async def create_webhook_test_event(request: Request, endpoint_id: str) -> HTTPResponse:
    """Send the endpoint a test event (no body; 409 INVALID_STATE when it is disabled).

    A webhooks.endpoint.tested event for it alone: signed, retried, listed like any other."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    delivery, attempts = await _webhooks(request).send_test_event(caller, endpoint_id)
    return queued_delivery_response(delivery, attempts)


@webhooks.get("/api/webhooks/<endpoint_id:str>/deliveries")
@spec.list_operation(
    "listWebhookDeliveries",
    "webhooks",
    DeliveryPublic,
    "A page of the endpoint's deliveries",
    sorts=DELIVERY_SORTS,
    default_sort=DELIVERY_DEFAULT_SORT,
    filters={"status": spec.string_enum(DeliveryStatus)},
    path=[ENDPOINT_ID],
    errors=(403, 404),
)
async def list_webhook_deliveries(request: Request, endpoint_id: str) -> HTTPResponse:
    """The endpoint's deliveries, newest first by default, each with every attempt."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    service = _webhooks(request)
    await service.get(caller, endpoint_id)  # 404 before the query is read
    page = parse_request_page(
        request, sorts=DELIVERY_SORTS, default_sort=DELIVERY_DEFAULT_SORT, filters=DELIVERY_FILTERS
    )
    rows, total = await service.list_deliveries(caller, endpoint_id, page)
    return deliveries_page_response(rows, total, page)


@webhooks.post("/api/webhooks/<endpoint_id:str>/deliveries/<delivery_id:str>/attempts")
@openapi.definition(
    operation="createWebhookDeliveryAttempt",
    tag="webhooks",
    parameter=[ENDPOINT_ID, DELIVERY_ID],
)
@spec.response(202, spec.ItemEnvelope[DeliveryPublic], "The delivery, pending again and due now")
@spec.error_responses(403, 404, 409)
@spec.bearer_auth()
async def create_webhook_delivery_attempt(
    request: Request, endpoint_id: str, delivery_id: str
) -> HTTPResponse:
    """Ask for a new attempt of a failed (or delivered) delivery: it is pending again, due
    now, with a fresh retry schedule; a pending one is 409 INVALID_STATE."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    return await _replay(request, caller, endpoint_id, delivery_id)


@webhooks.post("/api/webhooks/<endpoint_id:str>/deliveries/<delivery_id:str>/replay")
@openapi.definition(
    operation="replayWebhookDelivery", tag="webhooks", parameter=[ENDPOINT_ID, DELIVERY_ID]
)
@spec.response(202, spec.ItemEnvelope[DeliveryPublic], "The delivery, pending again and due now")
@spec.error_responses(403, 404, 409)
@spec.bearer_auth()
@deprecated_alias("/api/webhooks/{endpoint_id}/deliveries/{delivery_id}/attempts")
async def replay_webhook_delivery(
    request: Request, endpoint_id: str, delivery_id: str
) -> HTTPResponse:
    """Deprecated: `POST /api/webhooks/{id}/deliveries/{deliveryId}/attempts` replaces it,
    with the same answer."""
    caller = await confirmed_caller(request, MANAGE_WEBHOOKS)
    return await _replay(request, caller, endpoint_id, delivery_id)


async def _replay(
    request: Request, caller: Principal, endpoint_id: str, delivery_id: str
) -> HTTPResponse:
    delivery, attempts = await _webhooks(request).replay(caller, endpoint_id, delivery_id)
    return replayed_delivery_response(delivery, attempts)
