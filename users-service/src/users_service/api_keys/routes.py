"""HTTP handlers of the API keys API: parse, call the service, shape the response."""

from __future__ import annotations

from typing import Protocol

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

import api_shared.openapi as spec
from api_shared.auth import Access, Role, Scope, caller
from api_shared.paging import parse_request_page
from api_shared.validation import parse_body
from users_service.api_keys.presenter import (
    api_key_response,
    api_keys_page_response,
    created_api_key_response,
)
from users_service.api_keys.schemas import (
    ApiKeyCreate,
    ApiKeyOwner,
    ApiKeyPublic,
    ApiKeysRevocation,
    ApiKeyWithSecret,
)
from users_service.api_keys.services import API_KEY_DEFAULT_SORT, API_KEY_SORTS, ApiKeyService
from users_service.models import User
from users_service.responses import CACHE_CONTROL, no_content
from users_service.sessions import caller_of, client_of

api_keys = Blueprint("api_keys", url_prefix="/api/api-keys")

API_KEY_ID = spec.path_id("key_id", "The key's id; one that is not a UUID names none.")
# What an API key never does, whatever its scopes (docs/api.md#api-keys).
KEYS_REVOCATION_NEEDS_A_PERSON = (
    "Revoking every API key at once needs a person's login, not an API key."
)
NO_REVOCATION_BODY = ApiKeysRevocation()
# Who may call each route: an API key needs api-keys:read to read, api-keys:write to write;
# revoking every key at once is a person's login only; any key may describe itself.
READ_KEYS = Access(Scope.API_KEYS_READ)
WRITE_KEYS = Access(Scope.API_KEYS_WRITE)
A_PERSON = Access(person=KEYS_REVOCATION_NEEDS_A_PERSON)
ANY_CALLER = Access()


class _Context(Protocol):
    """What these handlers read of the service's context."""

    @property
    def api_keys(self) -> ApiKeyService: ...


def _keys(request: Request) -> ApiKeyService:
    context: _Context = request.app.ctx.context
    return context.api_keys


def _owner(user: User) -> ApiKeyOwner:
    return ApiKeyOwner(id=user.id, role=user.role)


@api_keys.post("/")
@openapi.definition(operation="createApiKey", tag="api-keys", body=spec.json_body(ApiKeyCreate))
@spec.response(
    201,
    spec.ItemEnvelope[ApiKeyWithSecret],
    "The new key, with its secret (shown this once)",
    headers={**spec.LOCATION, **CACHE_CONTROL},
)
@spec.error_responses(401, 403, 409, 429, 503, body=True)
@spec.bearer_auth()
async def create_api_key(request: Request) -> HTTPResponse:
    """Make an API key for the caller: a person's login, or a key with `api-keys:write`.

    A login older than RECENT_AUTHENTICATION_S (10 minutes) must send `currentPassword`
    (403 REAUTHENTICATION_REQUIRED without it, 401 INVALID_CREDENTIALS when wrong, 429 past
    the account's budget of wrong ones); an API key sends none. `scopes` is a non-empty set
    of known scopes (400 VALIDATION_FAILED naming `scopes` otherwise). `expiresAt` (RFC
    3339, in the future) is at most API_KEY_MAX_LIFETIME_S (a year) away and, for a key
    made by a key, no later than that key's own expiry (400 VALIDATION_FAILED naming
    `expiresAt` otherwise); absent, the key gets that latest expiry; null (never) only where
    API_KEY_NO_EXPIRY_FOR allows it. The secret is in this answer only; users-service keeps
    its SHA-256. A key making a key grants only scopes it holds itself (403 FORBIDDEN naming
    the others). A user holds at most 50 keys (409 INVALID_STATE past that). A key never
    exceeds its owner's rights: each route decides by the owner's current role, then by the
    scope.
    """
    principal, user = await caller_of(request, WRITE_KEYS)
    data = parse_body(request, ApiKeyCreate)
    key, secret = await _keys(request).create(user, principal, data, client_of(request))
    return created_api_key_response(key, _owner(user), secret)


@api_keys.delete("/")
@openapi.definition(
    operation="revokeApiKeys",
    tag="api-keys",
    body=spec.json_body(ApiKeysRevocation, required=False),  # none after a recent login
)
@no_content(
    "Every key of the caller is revoked: refused from now on", 401, 403, 429, 503, body=True
)
@spec.bearer_auth()
async def revoke_api_keys(request: Request) -> HTTPResponse:
    """Revoke (delete) every API key of the caller at once: for whoever fears a key leaked.

    A person's login only (an API key is 403 FORBIDDEN), recent or with `currentPassword`
    in the body, as for minting a key (403 REAUTHENTICATION_REQUIRED, 401
    INVALID_CREDENTIALS). Refused here at once, by the gateway and other services within
    STANDING_CACHE_S. 204 whether or not there were keys.
    """
    principal, user = await caller_of(request, A_PERSON)
    data = parse_body(request, ApiKeysRevocation) if request.body else NO_REVOCATION_BODY
    await _keys(request).revoke_all(user, principal, data.current_password, client_of(request))
    return empty()


@api_keys.get("/")
@spec.list_operation(
    "listApiKeys",
    "api-keys",
    ApiKeyPublic,
    "A page of the caller's API keys",
    sorts=API_KEY_SORTS,
    default_sort=API_KEY_DEFAULT_SORT,
    errors=(403,),
)
async def list_api_keys(request: Request) -> HTTPResponse:
    """The caller's API keys, newest first by default (a key needs `api-keys:read`).

    Each shows its prefix, never its secret. Any query parameter other than limit, offset
    and sort is 400 BAD_FILTER.
    """
    _, user = await caller_of(request, READ_KEYS)
    page = parse_request_page(request, sorts=API_KEY_SORTS, default_sort=API_KEY_DEFAULT_SORT)
    keys, total = await _keys(request).list(user, page)
    return api_keys_page_response(keys, _owner(user), total, page)


# Before "/<key_id>": "current" is no id.
@api_keys.get("/current")
@spec.get_operation(
    "getCurrentApiKey",
    "api-keys",
    ApiKeyPublic,
    "The key that authenticates the request",
    errors=(403, 404),
)
async def get_current_api_key(request: Request) -> HTTPResponse:
    """The API key this request is authenticated by, with its owner's current role: how
    every other service learns whose a key is and what it may do. Needs no scope: any valid
    key may describe itself. With an access token: 404 NOT_FOUND. A revoked, expired or
    unknown key is 401, a suspended owner's 403 FORBIDDEN.
    """
    principal = await caller(request, ANY_CALLER)
    key = await _keys(request).current(principal)
    owner = ApiKeyOwner(id=key.user_id, role=Role(principal.role))
    return api_key_response(key, owner)


@api_keys.get("/<key_id:str>")
@spec.get_operation(
    "getApiKey", "api-keys", ApiKeyPublic, "The key", path=[API_KEY_ID], errors=(403, 404)
)
async def get_api_key(request: Request, key_id: str) -> HTTPResponse:
    """One of the caller's API keys (a key needs `api-keys:read`); another user's is 404,
    like one that does not exist."""
    _, user = await caller_of(request, READ_KEYS)
    key = await _keys(request).get(user, key_id)
    return api_key_response(key, _owner(user))


@api_keys.delete("/<key_id:str>")
@openapi.definition(operation="revokeApiKey", tag="api-keys", parameter=API_KEY_ID)
@no_content("The key is revoked: refused from now on", 403, 404)
@spec.bearer_auth()
async def revoke_api_key(request: Request, key_id: str) -> HTTPResponse:
    """Revoke (delete) one of the caller's API keys (a key needs `api-keys:write`): refused
    here at once, by the gateway and other services within STANDING_CACHE_S. Another user's
    key is 404, like one that does not exist."""
    _, user = await caller_of(request, WRITE_KEYS)
    await _keys(request).revoke(user, key_id)
    return empty()
