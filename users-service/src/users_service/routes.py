"""HTTP handlers of the users, token, session and key APIs: parse, call the service, shape the
response."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

import api_shared.openapi as spec
from api_shared.auth import Principal, Role, authenticate, optional_principal
from api_shared.client_address import client_address
from api_shared.paging import parse_request_page
from api_shared.transactions import one_connection
from api_shared.validation import parse_body
from users_service.context import context_of
from users_service.models import ADDRESS_MAX_LENGTH, USER_AGENT_MAX_LENGTH, User
from users_service.ports import Client
from users_service.presenter import (
    created_user_response,
    jwks_response,
    sessions_page_response,
    token_response,
    user_response,
    users_page_response,
)
from users_service.schemas import (
    JwksPublic,
    RefreshTokenRequest,
    SessionPublic,
    TokenPublic,
    TokenRequest,
    UserCreate,
    UserDeletion,
    UserPublic,
    UserUpdate,
)
from users_service.services import DEFAULT_SORT, FILTERS, NO_DELETION_BODY, SORTS
from users_service.sessions import SESSION_DEFAULT_SORT, SESSION_SORTS

users = Blueprint("users", url_prefix="/api/users")
auth = Blueprint("auth", url_prefix="/api/auth")
jwks = Blueprint("jwks", url_prefix="/.well-known")

USER_ID = spec.path_id("user_id", "The user's id; one that is not a UUID names no user.")
SESSION_ID = spec.path_id("session_id", "The session's id; one that is not a UUID names none.")
CACHE_CONTROL = {"Cache-Control": {"required": True, "schema": {"type": "string"}}}
F = TypeVar("F", bound=Callable[..., Any])


def _no_content(description: str, *errors: int, body: bool = False) -> Callable[[F], F]:
    """Document an operation that answers 204 without a body, or one of ``errors``."""

    def document(handler: F) -> F:
        return spec.response(204, None, description)(
            spec.error_responses(*errors, body=body)(handler)
        )

    return document


async def _caller(request: Request) -> tuple[Principal, User]:
    """The token's principal and the caller's current row (``UserService.caller``), for the
    routes that act on the caller themselves."""
    principal = await authenticate(request)
    return principal, await context_of(request).users.caller(principal)


def _client(request: Request) -> Client:
    """The request's user agent and client address: shown in the sessions list, and what
    the budgets of users_service.budgets charge per address.

    The address is the one the gateway resolved (X-Real-IP: the client, behind any trusted
    proxies), else the connection's peer (api_shared.client_address).
    """
    agent = request.headers.get("user-agent")
    address = client_address(request)[:ADDRESS_MAX_LENGTH] or None
    agent = agent[:USER_AGENT_MAX_LENGTH].replace("\x00", "") if agent else None
    return Client(user_agent=agent or None, address=address)


@users.post("/")
@openapi.definition(operation="createUser", tag="users", body=spec.json_body(UserCreate))
@spec.response(201, spec.ItemEnvelope[UserPublic], "The new user", headers=spec.LOCATION)
@spec.error_responses(403, 409, 503, body=True)
@spec.bearer_auth(optional=True)
async def create_user(request: Request) -> HTTPResponse:
    """Sign up (public); creating an admin needs an admin's token.

    An email is stored normalised and is unique regardless of case (409 EMAIL_TAKEN); a
    password needs an email. 503 UNAVAILABLE (with Retry-After) when every password-hashing
    slot stays busy.
    """
    caller = await optional_principal(request)
    user = await context_of(request).users.sign_up(parse_body(request, UserCreate), caller)
    return created_user_response(user)


@users.get("/")
@spec.list_operation(
    "listUsers",
    "users",
    UserPublic,
    "A page of users",
    sorts=SORTS,
    default_sort=DEFAULT_SORT,
    filters={
        "role": spec.string_enum(role.value for role in Role),
        "isActive": spec.string_enum(("true", "false")),
    },
    errors=(403,),
)
async def list_users(request: Request) -> HTTPResponse:
    """List users, paged (admins only).

    Filters: role, isActive (false: the suspended accounts). Any query parameter other than
    limit, offset, sort, role and isActive is 400 BAD_FILTER.
    """
    caller = await authenticate(request)
    service = context_of(request).users
    async with one_connection():  # its three reads: the caller, the page, the total
        lister = await service.lister(caller)  # before the query: 403 tells nothing of it
        page = parse_request_page(request, sorts=SORTS, default_sort=DEFAULT_SORT, filters=FILTERS)
        rows, total = await service.list_users(lister, page)
    return users_page_response(rows, total, page)


@users.get("/me")
@openapi.definition(operation="getMe", tag="users")
@spec.response(200, spec.ItemEnvelope[UserPublic], "The caller's user")
@spec.error_responses(403)
@spec.bearer_auth()
async def get_me(request: Request) -> HTTPResponse:
    """The caller's own user (403 when the account is suspended)."""
    _, user = await _caller(request)
    return user_response(user)


@users.get("/<user_id:str>")
@openapi.definition(operation="getUser", tag="users", parameter=USER_ID)
@spec.response(200, spec.ItemEnvelope[UserPublic], "The user")
@spec.error_responses(403, 404)
@spec.bearer_auth()
async def get_user(request: Request, user_id: str) -> HTTPResponse:
    """One user: yourself, or anyone for an admin."""
    user = await context_of(request).users.get(await authenticate(request), user_id)
    return user_response(user)


@users.patch("/<user_id:str>")
@openapi.definition(
    operation="updateUser",
    tag="users",
    parameter=USER_ID,
    body=spec.json_body(UserUpdate, media_types=(spec.JSON, spec.MERGE_PATCH_JSON)),
)
@spec.response(200, spec.ItemEnvelope[UserPublic], "The updated user")
@spec.error_responses(401, 403, 404, 409, 429, 503, body=True)
@spec.bearer_auth()
async def update_user(request: Request, user_id: str) -> HTTPResponse:
    """Change a user's name, email, password or (admins only) role or isActive.

    Absent fields are kept; `email: null` removes the email. Changing your own password or
    email needs `currentPassword` in the same body (400 VALIDATION_FAILED without it, 401
    INVALID_CREDENTIALS when wrong, 429 RATE_LIMITED after 10 wrong ones in 15 minutes);
    an admin changing another user's does not. A new email,
    password or role ends the user's sessions (but the caller's own, on their own account);
    `isActive: false` suspends the account and ends every session of it, `true` lifts the
    suspension.
    """
    caller = await authenticate(request)
    data = parse_body(request, UserUpdate)
    user = await context_of(request).users.update(caller, user_id, data, client=_client(request))
    return user_response(user)


@users.delete("/<user_id:str>")
@openapi.definition(
    operation="deleteUser", tag="users", parameter=USER_ID, body=spec.json_body(UserDeletion)
)
@_no_content("Deleted", 401, 403, 404, 429, 503, body=True)
@spec.bearer_auth()
async def delete_user(request: Request, user_id: str) -> HTTPResponse:
    """Delete a user: yourself, with `currentPassword` in the body; anyone, for an admin.

    Deleting your own account (admins included) needs `currentPassword` (400
    VALIDATION_FAILED without it, 401 INVALID_CREDENTIALS when wrong); an admin deleting
    another user sends no body. The user's sessions end with it; their orders that may no
    longer be deleted (confirmed, shipped, delivered) are kept, anonymised (docs/api.md).
    """
    caller = await authenticate(request)
    data = parse_body(request, UserDeletion) if request.body else NO_DELETION_BODY
    await context_of(request).users.delete(caller, user_id, data, client=_client(request))
    return empty()


@auth.post("/token")
@openapi.definition(operation="issueToken", tag="auth", body=spec.json_body(TokenRequest))
@spec.response(
    200, spec.ItemEnvelope[TokenPublic], "An access and a refresh token", headers=CACHE_CONTROL
)
@spec.error_responses(401, 403, 429, 503, body=True)
async def issue_token(request: Request) -> HTTPResponse:
    """Log in: exchange an email and password for an access token and a refresh token.

    An unknown email and a wrong password get the same 401 INVALID_CREDENTIALS; an email
    longer than an address can be (RFC 5321) is 400 VALIDATION_FAILED; a suspended account,
    once its password is checked, 403 FORBIDDEN. Failed logins are limited per account
    (429 RATE_LIMITED, however the email is spelt). Each login starts a session.
    """
    credentials = parse_body(request, TokenRequest)
    tokens = await context_of(request).auth.log_in(
        credentials.email, credentials.password, _client(request)
    )
    return token_response(tokens)


@auth.post("/refresh")
@openapi.definition(operation="refreshToken", tag="auth", body=spec.json_body(RefreshTokenRequest))
@spec.response(
    200, spec.ItemEnvelope[TokenPublic], "New access and refresh tokens", headers=CACHE_CONTROL
)
@spec.error_responses(401, 403, 429, body=True)
async def refresh_token(request: Request) -> HTTPResponse:
    """Exchange a refresh token for new tokens; the one presented is spent.

    A spent, expired, unknown or ended session's token is 401 INVALID_CREDENTIALS; a spent
    one presented again also ends its session (it was stolen, or raced). A suspended
    account is 403 FORBIDDEN.
    """
    body = parse_body(request, RefreshTokenRequest)
    return token_response(await context_of(request).sessions.refresh(body.refresh_token))


@auth.post("/logout")
@openapi.definition(operation="logOut", tag="auth", body=spec.json_body(RefreshTokenRequest))
@_no_content("The session of this refresh token is over (if there was one)", body=True)
async def log_out(request: Request) -> HTTPResponse:
    """End the session of a refresh token; an unknown token changes nothing (still 204).

    Access tokens of the session stop working at users-service at once, elsewhere when they
    expire.
    """
    body = parse_body(request, RefreshTokenRequest)
    await context_of(request).sessions.log_out(body.refresh_token)
    return empty()


@auth.post("/logout-all")
@openapi.definition(operation="logOutEverywhere", tag="auth")
@_no_content("Every session of the caller is over", 403)
@spec.bearer_auth()
async def log_out_everywhere(request: Request) -> HTTPResponse:
    """End every session of the caller, this one included."""
    _, user = await _caller(request)
    await context_of(request).sessions.log_out_everywhere(user)
    return empty()


@auth.get("/sessions")
@spec.list_operation(
    "listSessions",
    "auth",
    SessionPublic,
    "A page of the caller's open sessions",
    sorts=SESSION_SORTS,
    default_sort=SESSION_DEFAULT_SORT,
    errors=(403,),
)
async def list_sessions(request: Request) -> HTTPResponse:
    """The caller's open sessions, most recently used first by default.

    Any query parameter other than limit, offset and sort is 400 BAD_FILTER.
    """
    caller, user = await _caller(request)
    page = parse_request_page(request, sorts=SESSION_SORTS, default_sort=SESSION_DEFAULT_SORT)
    sessions, total = await context_of(request).sessions.list(user, page)
    return sessions_page_response(sessions, total, page, current=caller.session_id)


@auth.delete("/sessions/<session_id:str>")
@openapi.definition(operation="endSession", tag="auth", parameter=SESSION_ID)
@_no_content("The session is over", 403, 404)
@spec.bearer_auth()
async def end_session(request: Request, session_id: str) -> HTTPResponse:
    """End one of the caller's open sessions; another user's is 404, like one that is not."""
    _, user = await _caller(request)
    await context_of(request).sessions.end(user, session_id)
    return empty()


@jwks.get("/jwks.json")
@openapi.definition(operation="getJwks", tag="auth")
@spec.response(200, JwksPublic, "The public keys that verify tokens", headers=CACHE_CONTROL)
@spec.error_responses()
async def get_jwks(request: Request) -> HTTPResponse:
    """The public keys of token signatures (JWKS)."""
    document = context_of(request).signing_keys.jwks()
    return jwks_response(document)
