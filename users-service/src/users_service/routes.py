"""HTTP handlers of the users, token, session and key APIs: parse, call the service, shape the
response."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

import api_shared.openapi as spec
from api_shared.auth import (
    Principal,
    Role,
    Scope,
    authenticate,
    optional_principal,
    require_person,
    require_scope,
)
from api_shared.client_address import client_address
from api_shared.deprecation import deprecated_alias
from api_shared.paging import parse_request_page
from api_shared.transactions import one_connection
from api_shared.validation import parse_body, parse_input, read_json_object
from users_service.api_keys import API_KEY_DEFAULT_SORT, API_KEY_SORTS
from users_service.context import context_of
from users_service.models import ADDRESS_MAX_LENGTH, USER_AGENT_MAX_LENGTH, User
from users_service.ports import Client
from users_service.presenter import (
    api_key_response,
    api_keys_page_response,
    created_api_key_response,
    created_user_response,
    jwks_response,
    sessions_page_response,
    token_response,
    user_response,
    users_page_response,
)
from users_service.schemas import (
    REFRESH_GRANT,
    ApiKeyCreate,
    ApiKeyOwner,
    ApiKeyPublic,
    ApiKeysRevocation,
    ApiKeyWithSecret,
    EmailVerificationCreate,
    JwksPublic,
    PasswordResetCreate,
    PasswordResetRequestCreate,
    RefreshGrant,
    RefreshTokenRequest,
    SessionPublic,
    TokenGrant,
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
accounts = Blueprint("accounts", url_prefix="/api")
api_keys = Blueprint("api_keys", url_prefix="/api/api-keys")

USER_ID = spec.path_id("user_id", "The user's id; one that is not a UUID names no user.")
SESSION_ID = spec.path_id("session_id", "The session's id; one that is not a UUID names none.")
API_KEY_ID = spec.path_id("key_id", "The key's id; one that is not a UUID names none.")
CACHE_CONTROL = {"Cache-Control": {"required": True, "schema": {"type": "string"}}}
# What an API key never does, whatever its scopes (docs/api.md#api-keys).
SESSIONS_NEED_A_PERSON = (
    "Sessions are a person's logins: this needs a person's login, not an API key."
)
VERIFICATION_NEEDS_A_PERSON = (
    "Asking for a verification message needs a person's login, not an API key."
)
KEYS_REVOCATION_NEEDS_A_PERSON = (
    "Revoking every API key at once needs a person's login, not an API key."
)
NO_REVOCATION_BODY = ApiKeysRevocation()
F = TypeVar("F", bound=Callable[..., Any])


def _no_content(
    description: str, *errors: int, body: bool = False, status: int = 204
) -> Callable[[F], F]:
    """Document an operation that answers ``status`` (204) without a body, or one of
    ``errors``."""

    def document(handler: F) -> F:
        return spec.response(status, None, description)(
            spec.error_responses(*errors, body=body)(handler)
        )

    return document


async def _caller(request: Request, scope: Scope) -> tuple[Principal, User]:
    """The token's principal and the caller's current row (``UserService.caller``), for the
    routes that act on the caller themselves; an API key needs ``scope``."""
    principal = require_scope(await authenticate(request), scope)
    return principal, await context_of(request).users.caller(principal)


async def _person(request: Request, message: str) -> tuple[Principal, User]:
    """As ``_caller``, for what only a person's login does: an API key is 403 ``message``."""
    principal = require_person(await authenticate(request), message)
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
    slot stays busy. An API key sent here needs `users:write`.
    """
    caller = await optional_principal(request)
    if caller is not None:
        require_scope(caller, Scope.USERS_WRITE)
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
    limit, offset, sort, role and isActive is 400 BAD_FILTER. An API key needs `users:read`.
    """
    caller = require_scope(await authenticate(request), Scope.USERS_READ)
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
    """The caller's own user (403 when the account is suspended). An API key needs
    `users:read`."""
    _, user = await _caller(request, Scope.USERS_READ)
    return user_response(user)


@users.get("/<user_id:str>")
@openapi.definition(operation="getUser", tag="users", parameter=USER_ID)
@spec.response(200, spec.ItemEnvelope[UserPublic], "The user")
@spec.error_responses(403, 404)
@spec.bearer_auth()
async def get_user(request: Request, user_id: str) -> HTTPResponse:
    """One user: yourself, or anyone for an admin. An API key needs `users:read`."""
    caller = require_scope(await authenticate(request), Scope.USERS_READ)
    user = await context_of(request).users.get(caller, user_id)
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

    An API key needs `users:write`, and never changes a password or email (403 FORBIDDEN).
    """
    caller = require_scope(await authenticate(request), Scope.USERS_WRITE)
    data = parse_body(request, UserUpdate)
    user = await context_of(request).users.update(caller, user_id, data, client=_client(request))
    return user_response(user)


@users.delete("/<user_id:str>")
@openapi.definition(
    operation="deleteUser",
    tag="users",
    parameter=USER_ID,
    # Optional: an admin deleting another user sends none.
    body=spec.json_body(UserDeletion, required=False),
)
@_no_content("Deleted", 401, 403, 404, 429, 503, body=True)
@spec.bearer_auth()
async def delete_user(request: Request, user_id: str) -> HTTPResponse:
    """Delete a user: yourself, with `currentPassword` in the body; anyone, for an admin.

    Deleting your own account (admins included) needs `currentPassword` (400
    VALIDATION_FAILED without it, 401 INVALID_CREDENTIALS when wrong); an admin deleting
    another user sends no body. The user's sessions end with it; their orders that may no
    longer be deleted (confirmed, shipped, delivered) are kept, anonymised (docs/api.md).
    An API key needs `users:write`, and never deletes its own owner (403 FORBIDDEN).
    """
    caller = require_scope(await authenticate(request), Scope.USERS_WRITE)
    data = parse_body(request, UserDeletion) if request.body else NO_DELETION_BODY
    await context_of(request).users.delete(caller, user_id, data, client=_client(request))
    return empty()


@auth.post("/token")
@openapi.definition(operation="issueToken", tag="auth", body=spec.json_body(TokenGrant))
@spec.response(
    200, spec.ItemEnvelope[TokenPublic], "An access and a refresh token", headers=CACHE_CONTROL
)
@spec.error_responses(401, 403, 429, 503, body=True)
async def issue_token(request: Request) -> HTTPResponse:
    """Log in with an email and password, or exchange a refresh token (OAuth 2's grants).

    `grantType` `password` (the default): an unknown email and a wrong password get the same
    401 INVALID_CREDENTIALS; an email longer than an address can be (RFC 5321) is 400
    VALIDATION_FAILED; a suspended account, once its password is checked, 403 FORBIDDEN.
    Failed logins are limited per account (429 RATE_LIMITED, however the email is spelt).
    Each login starts a session.

    `grantType` `refresh_token`: the refresh token presented is spent. A spent, expired,
    unknown or ended session's token is 401 INVALID_CREDENTIALS; a spent one presented again
    also ends its session (it was stolen, or raced). A suspended account is 403 FORBIDDEN.
    """
    body = read_json_object(request)
    if body.get("grantType") == REFRESH_GRANT:
        grant = parse_input(RefreshGrant, body)
        return token_response(await context_of(request).sessions.refresh(grant.refresh_token))
    credentials = parse_input(TokenRequest, body)
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
@deprecated_alias("/api/auth/token")
async def refresh_token(request: Request) -> HTTPResponse:
    """Deprecated: `POST /api/auth/token` with `grantType` `refresh_token` replaces it.

    Exchange a refresh token for new tokens; the one presented is spent. A spent, expired,
    unknown or ended session's token is 401 INVALID_CREDENTIALS; a spent one presented again
    also ends its session (it was stolen, or raced). A suspended account is 403 FORBIDDEN.
    """
    body = parse_body(request, RefreshTokenRequest)
    return token_response(await context_of(request).sessions.refresh(body.refresh_token))


@auth.post("/logout")
@openapi.definition(operation="logOut", tag="auth", body=spec.json_body(RefreshTokenRequest))
@_no_content("The session of this refresh token is over (if there was one)", body=True)
@deprecated_alias("/api/auth/sessions/current")
async def log_out(request: Request) -> HTTPResponse:
    """Deprecated: `DELETE /api/auth/sessions/current` (with the access token) replaces it.

    End the session of a refresh token; an unknown token changes nothing (still 204). Access
    tokens of the session stop working at users-service at once, elsewhere when they expire.
    """
    body = parse_body(request, RefreshTokenRequest)
    await context_of(request).sessions.log_out(body.refresh_token)
    return empty()


@auth.post("/logout-all")
@openapi.definition(operation="logOutEverywhere", tag="auth")
@_no_content("Every session of the caller is over", 403)
@spec.bearer_auth()
@deprecated_alias("/api/auth/sessions")
async def log_out_everywhere(request: Request) -> HTTPResponse:
    """Deprecated: `DELETE /api/auth/sessions` replaces it. End every session of the caller,
    this one included."""
    return await _end_every_session(request)


@auth.delete("/sessions")
@openapi.definition(operation="endSessions", tag="auth")
@_no_content("Every session of the caller is over", 403)
@spec.bearer_auth()
async def end_sessions(request: Request) -> HTTPResponse:
    """End every session of the caller, this one included."""
    return await _end_every_session(request)


async def _end_every_session(request: Request) -> HTTPResponse:
    _, user = await _person(request, SESSIONS_NEED_A_PERSON)
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

    Any query parameter other than limit, offset and sort is 400 BAD_FILTER. An API key is
    403 FORBIDDEN: sessions are a person's.
    """
    caller, user = await _person(request, SESSIONS_NEED_A_PERSON)
    page = parse_request_page(request, sorts=SESSION_SORTS, default_sort=SESSION_DEFAULT_SORT)
    sessions, total = await context_of(request).sessions.list(user, page)
    return sessions_page_response(sessions, total, page, current=caller.session_id)


@auth.delete("/sessions/current")
@openapi.definition(operation="endCurrentSession", tag="auth")
@_no_content("The session of this request's token is over", 403)
@spec.bearer_auth()
async def end_current_session(request: Request) -> HTTPResponse:
    """Log out: end the session the request's access token belongs to.

    Its refresh tokens are refused from now on; access tokens of the session stop working at
    users-service at once, elsewhere when they expire.
    """
    caller, user = await _person(request, SESSIONS_NEED_A_PERSON)
    await context_of(request).sessions.end(user, caller.session_id or "")
    return empty()


@auth.delete("/sessions/<session_id:str>")
@openapi.definition(operation="endSession", tag="auth", parameter=SESSION_ID)
@_no_content("The session is over", 403, 404)
@spec.bearer_auth()
async def end_session(request: Request, session_id: str) -> HTTPResponse:
    """End one of the caller's open sessions; another user's is 404, like one that is not."""
    _, user = await _person(request, SESSIONS_NEED_A_PERSON)
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


@accounts.post("/email-verifications")
@openapi.definition(
    operation="verifyEmail", tag="accounts", body=spec.json_body(EmailVerificationCreate)
)
@_no_content("The address the token was mailed to is verified", 429, body=True)
async def verify_email(request: Request) -> HTTPResponse:
    """Redeem the token of a verification message (public: the link may be opened anywhere).

    A token works once, until it expires (EMAIL_VERIFICATION_TTL_S, 2 days) or the user's
    email changes; any other is 400 VALIDATION_FAILED naming `token`. The user's
    `emailVerified` becomes true (a `users.user.updated` event says so).
    """
    body = parse_body(request, EmailVerificationCreate)
    await context_of(request).verification.verify(body.token)
    return empty()


@accounts.post("/email-verification-requests")
@openapi.definition(operation="requestEmailVerification", tag="accounts")
@_no_content("A new verification message is on its way", 403, 409, 429, status=202)
@spec.bearer_auth()
async def request_email_verification(request: Request) -> HTTPResponse:
    """Mail the caller a new verification link (earlier ones keep working until they expire).

    409 INVALID_STATE when the caller has no email or it is verified already; 429
    RATE_LIMITED past VERIFICATION_MAILS_PER_HOUR messages an hour (the sign-up's counts).
    An API key is 403 FORBIDDEN.
    """
    _, user = await _person(request, VERIFICATION_NEEDS_A_PERSON)
    await context_of(request).verification.resend(user)
    return empty(status=202)


@accounts.post("/password-reset-requests")
@openapi.definition(
    operation="requestPasswordReset",
    tag="accounts",
    body=spec.json_body(PasswordResetRequestCreate),
)
@_no_content(
    "Accepted: if an account has this address, a reset link is mailed to it",
    429,
    body=True,
    status=202,
)
async def request_password_reset(request: Request) -> HTTPResponse:
    """Ask for a reset link (public). The answer is the same 202, in the same time, whether
    or not an account has the address: the request is queued and handled afterwards.

    At most PASSWORD_RESET_MAILS_PER_HOUR messages an hour go to one address and to one
    account; requests past it are accepted and dropped. A suspended account gets none.
    """
    body = parse_body(request, PasswordResetRequestCreate)
    await context_of(request).resets.request(body.email)
    return empty(status=202)


@accounts.post("/password-resets")
@openapi.definition(
    operation="resetPassword", tag="accounts", body=spec.json_body(PasswordResetCreate)
)
@_no_content("The password is set; every session of the account is over", 403, 429, 503, body=True)
async def reset_password(request: Request) -> HTTPResponse:
    """Set a new password with the token of a reset message (public).

    The token works once, within PASSWORD_RESET_TTL_S (30 minutes, at most an hour), and
    stops working when a newer reset is requested or the password changes; any other is 400
    VALIDATION_FAILED naming `token`. The password follows sign-up's rules. Every session of
    the account ends (their refresh tokens are refused) and the address counts as verified.
    403 FORBIDDEN for a suspended account.
    """
    body = parse_body(request, PasswordResetCreate)
    await context_of(request).resets.reset(body.token, body.password, _client(request))
    return empty()


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
    principal, user = await _caller(request, Scope.API_KEYS_WRITE)
    data = parse_body(request, ApiKeyCreate)
    key, secret = await context_of(request).api_keys.create(user, principal, data, _client(request))
    return created_api_key_response(key, _owner(user), secret)


@api_keys.delete("/")
@openapi.definition(
    operation="revokeApiKeys",
    tag="api-keys",
    body=spec.json_body(ApiKeysRevocation, required=False),  # none after a recent login
)
@_no_content(
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
    principal, user = await _person(request, KEYS_REVOCATION_NEEDS_A_PERSON)
    data = parse_body(request, ApiKeysRevocation) if request.body else NO_REVOCATION_BODY
    await context_of(request).api_keys.revoke_all(
        user, principal, data.current_password, _client(request)
    )
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
    _, user = await _caller(request, Scope.API_KEYS_READ)
    page = parse_request_page(request, sorts=API_KEY_SORTS, default_sort=API_KEY_DEFAULT_SORT)
    keys, total = await context_of(request).api_keys.list(user, page)
    return api_keys_page_response(keys, _owner(user), total, page)


# Before "/<key_id>": "current" is no id.
@api_keys.get("/current")
@openapi.definition(operation="getCurrentApiKey", tag="api-keys")
@spec.response(200, spec.ItemEnvelope[ApiKeyPublic], "The key that authenticates the request")
@spec.error_responses(403, 404)
@spec.bearer_auth()
async def get_current_api_key(request: Request) -> HTTPResponse:
    """The API key this request is authenticated by, with its owner's current role: how
    every other service learns whose a key is and what it may do. Needs no scope: any valid
    key may describe itself. With an access token: 404 NOT_FOUND. A revoked, expired or
    unknown key is 401, a suspended owner's 403 FORBIDDEN.
    """
    principal = await authenticate(request)
    key = await context_of(request).api_keys.current(principal)
    owner = ApiKeyOwner(id=key.user_id, role=Role(principal.role))
    return api_key_response(key, owner)


@api_keys.get("/<key_id:str>")
@openapi.definition(operation="getApiKey", tag="api-keys", parameter=API_KEY_ID)
@spec.response(200, spec.ItemEnvelope[ApiKeyPublic], "The key")
@spec.error_responses(403, 404)
@spec.bearer_auth()
async def get_api_key(request: Request, key_id: str) -> HTTPResponse:
    """One of the caller's API keys (a key needs `api-keys:read`); another user's is 404,
    like one that does not exist."""
    _, user = await _caller(request, Scope.API_KEYS_READ)
    key = await context_of(request).api_keys.get(user, key_id)
    return api_key_response(key, _owner(user))


@api_keys.delete("/<key_id:str>")
@openapi.definition(operation="revokeApiKey", tag="api-keys", parameter=API_KEY_ID)
@_no_content("The key is revoked: refused from now on", 403, 404)
@spec.bearer_auth()
async def revoke_api_key(request: Request, key_id: str) -> HTTPResponse:
    """Revoke (delete) one of the caller's API keys (a key needs `api-keys:write`): refused
    here at once, by the gateway and other services within STANDING_CACHE_S. Another user's
    key is 404, like one that does not exist."""
    _, user = await _caller(request, Scope.API_KEYS_WRITE)
    await context_of(request).api_keys.revoke(user, key_id)
    return empty()
