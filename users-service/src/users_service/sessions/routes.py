"""HTTP handlers of the token and session APIs and of the signing keys: parse, call the
service, shape the response."""

from __future__ import annotations

from typing import Protocol

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

import api_shared.openapi as spec
from api_shared.auth import Access
from api_shared.deprecation import deprecated_alias
from api_shared.paging import parse_request_page
from api_shared.validation import parse_body, parse_input, read_json_object
from users_service.models import User
from users_service.responses import CACHE_CONTROL, no_content
from users_service.sessions.callers import caller_of, client_of
from users_service.sessions.keys import SigningKeys
from users_service.sessions.ports import Login
from users_service.sessions.presenter import jwks_response, sessions_page_response, token_response
from users_service.sessions.schemas import (
    REFRESH_GRANT,
    JwksPublic,
    RefreshGrant,
    RefreshTokenRequest,
    SessionPublic,
    TokenGrant,
    TokenPublic,
    TokenRequest,
)
from users_service.sessions.services import SESSION_DEFAULT_SORT, SESSION_SORTS, SessionService

auth = Blueprint("auth", url_prefix="/api/auth")
jwks = Blueprint("jwks", url_prefix="/.well-known")

SESSION_ID = spec.path_id("session_id", "The session's id; one that is not a UUID names none.")
# What an API key never does, whatever its scopes (docs/api.md#api-keys).
SESSIONS_NEED_A_PERSON = (
    "Sessions are a person's logins: this needs a person's login, not an API key."
)
# Who may call the routes on the caller's sessions: a person's login, never an API key.
A_PERSON = Access(person=SESSIONS_NEED_A_PERSON)


class _Context(Protocol):
    """What these handlers read of the service's context."""

    @property
    def sessions(self) -> SessionService: ...
    @property
    def auth(self) -> Login: ...
    @property
    def signing_keys(self) -> SigningKeys: ...


def _context(request: Request) -> _Context:
    context: _Context = request.app.ctx.context
    return context


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
        return token_response(await _context(request).sessions.refresh(grant.refresh_token))
    credentials = parse_input(TokenRequest, body)
    tokens = await _context(request).auth.log_in(
        credentials.email, credentials.password, client_of(request)
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
    return token_response(await _context(request).sessions.refresh(body.refresh_token))


@auth.post("/logout")
@openapi.definition(operation="logOut", tag="auth", body=spec.json_body(RefreshTokenRequest))
@no_content("The session of this refresh token is over (if there was one)", body=True)
@deprecated_alias("/api/auth/sessions/current")
async def log_out(request: Request) -> HTTPResponse:
    """Deprecated: `DELETE /api/auth/sessions/current` (with the access token) replaces it.

    End the session of a refresh token; an unknown token changes nothing (still 204). Access
    tokens of the session stop working at users-service at once, elsewhere when they expire.
    """
    body = parse_body(request, RefreshTokenRequest)
    await _context(request).sessions.log_out(body.refresh_token)
    return empty()


@auth.post("/logout-all")
@openapi.definition(operation="logOutEverywhere", tag="auth")
@no_content("Every session of the caller is over", 403)
@spec.bearer_auth()
@deprecated_alias("/api/auth/sessions")
async def log_out_everywhere(request: Request) -> HTTPResponse:
    """Deprecated: `DELETE /api/auth/sessions` replaces it. End every session of the caller,
    this one included."""
    _, user = await caller_of(request, A_PERSON)
    return await _end_every_session(request, user)


@auth.delete("/sessions")
@openapi.definition(operation="endSessions", tag="auth")
@no_content("Every session of the caller is over", 403)
@spec.bearer_auth()
async def end_sessions(request: Request) -> HTTPResponse:
    """End every session of the caller, this one included."""
    _, user = await caller_of(request, A_PERSON)
    return await _end_every_session(request, user)


async def _end_every_session(request: Request, user: User) -> HTTPResponse:
    await _context(request).sessions.log_out_everywhere(user)
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
    caller, user = await caller_of(request, A_PERSON)
    page = parse_request_page(request, sorts=SESSION_SORTS, default_sort=SESSION_DEFAULT_SORT)
    sessions, total = await _context(request).sessions.list(user, page)
    return sessions_page_response(sessions, total, page, current=caller.session_id)


@auth.delete("/sessions/current")
@openapi.definition(operation="endCurrentSession", tag="auth")
@no_content("The session of this request's token is over", 403)
@spec.bearer_auth()
async def end_current_session(request: Request) -> HTTPResponse:
    """Log out: end the session the request's access token belongs to.

    Its refresh tokens are refused from now on; access tokens of the session stop working at
    users-service at once, elsewhere when they expire.
    """
    caller, user = await caller_of(request, A_PERSON)
    await _context(request).sessions.end(user, caller.session_id or "")
    return empty()


@auth.delete("/sessions/<session_id:str>")
@openapi.definition(operation="endSession", tag="auth", parameter=SESSION_ID)
@no_content("The session is over", 403, 404)
@spec.bearer_auth()
async def end_session(request: Request, session_id: str) -> HTTPResponse:
    """End one of the caller's open sessions; another user's is 404, like one that is not."""
    _, user = await caller_of(request, A_PERSON)
    await _context(request).sessions.end(user, session_id)
    return empty()


@jwks.get("/jwks.json")
@openapi.definition(operation="getJwks", tag="auth")
@spec.response(200, JwksPublic, "The public keys that verify tokens", headers=CACHE_CONTROL)
@spec.error_responses()
async def get_jwks(request: Request) -> HTTPResponse:
    """The public keys of token signatures (JWKS)."""
    document = _context(request).signing_keys.jwks()
    return jwks_response(document)
