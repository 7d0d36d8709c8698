"""HTTP handlers of the users, token and key APIs: parse, call the service, shape the response."""

from __future__ import annotations

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

from api_shared.auth import authenticate, optional_principal
from api_shared.openapi import (
    JSON,
    LOCATION,
    MERGE_PATCH_JSON,
    ItemEnvelope,
    PageEnvelope,
    bearer_auth,
    error_responses,
    json_body,
    page_parameters,
    path_id,
    response,
    string_enum,
)
from api_shared.paging import allowed_sorts, page_body
from api_shared.representation import item_body, json_response
from api_shared.validation import parse_body
from users_service.keys import SigningKeys
from users_service.models import Role, User
from users_service.schemas import (
    JwksPublic,
    TokenPublic,
    TokenRequest,
    UserCreate,
    UserPublic,
    UserUpdate,
)
from users_service.services import SORT_FIELDS, AuthService, UserService

users = Blueprint("users", url_prefix="/api/users")
auth = Blueprint("auth", url_prefix="/api/auth")
jwks = Blueprint("jwks", url_prefix="/.well-known")

# Verifiers refetch the JWKS when they meet an unknown kid, so a short cache is safe.
JWKS_CACHE_CONTROL = "public, max-age=300"

USER_ID = path_id("user_id", "The user's id; one that is not a UUID names no user.")
CACHE_CONTROL = {"Cache-Control": {"required": True, "schema": {"type": "string"}}}


def _users(request: Request) -> UserService:
    service: UserService = request.app.ctx.user_service
    return service


def _public(user: User) -> dict[str, object]:
    return UserPublic.model_validate(user).wire()


@users.post("/")
@openapi.definition(operation="createUser", tag="users", body=json_body(UserCreate))
@response(201, ItemEnvelope[UserPublic], "The new user", headers=LOCATION)
@error_responses(403, 409, 503, body=True)
@bearer_auth(optional=True)
async def create_user(request: Request) -> HTTPResponse:
    """Sign up (public); creating an admin needs an admin's token.

    An email is stored normalised and is unique regardless of case (409 EMAIL_TAKEN); a
    password needs an email. 503 UNAVAILABLE (with Retry-After) when every password-hashing
    slot stays busy.
    """
    caller = await optional_principal(request)
    user = await _users(request).sign_up(parse_body(request, UserCreate), caller)
    return json_response(
        item_body(_public(user)), status=201, headers={"Location": f"/api/users/{user.id}"}
    )


@users.get("/")
@openapi.definition(
    operation="listUsers",
    tag="users",
    parameter=page_parameters(
        allowed_sorts(tuple(SORT_FIELDS)),
        "createdAt",
        {"role": string_enum(role.value for role in Role)},
    ),
)
@response(200, PageEnvelope[UserPublic], "A page of users")
@error_responses(400, 403)
@bearer_auth()
async def list_users(request: Request) -> HTTPResponse:
    """List users, paged (admins only).

    Any query parameter other than limit, offset, sort and role is 400 BAD_FILTER.
    """
    caller = await authenticate(request)
    query = request.get_query_args(keep_blank_values=True)
    page = await _users(request).list_users(caller, query)
    return json_response(page_body([_public(u) for u in page.users], page.total, page.request))


@users.get("/<user_id:str>")
@openapi.definition(operation="getUser", tag="users", parameter=USER_ID)
@response(200, ItemEnvelope[UserPublic], "The user")
@error_responses(403, 404)
@bearer_auth()
async def get_user(request: Request, user_id: str) -> HTTPResponse:
    """One user: yourself, or anyone for an admin."""
    user = await _users(request).get(await authenticate(request), user_id)
    return json_response(item_body(_public(user)))


@users.patch("/<user_id:str>")
@openapi.definition(
    operation="updateUser",
    tag="users",
    parameter=USER_ID,
    body=json_body(UserUpdate, media_types=(JSON, MERGE_PATCH_JSON)),
)
@response(200, ItemEnvelope[UserPublic], "The updated user")
@error_responses(403, 404, 409, 503, body=True)
@bearer_auth()
async def update_user(request: Request, user_id: str) -> HTTPResponse:
    """Change a user's name, email, password or (admins only) role.

    Absent fields are kept; `email: null` removes the email. Changing your own password or
    email needs `currentPassword` in the same body (400 VALIDATION_FAILED without it, 401
    INVALID_CREDENTIALS when wrong); an admin changing another user's does not.
    """
    caller = await authenticate(request)
    user = await _users(request).update(caller, user_id, parse_body(request, UserUpdate))
    return json_response(item_body(_public(user)))


@users.delete("/<user_id:str>")
@openapi.definition(operation="deleteUser", tag="users", parameter=USER_ID)
@response(204, None, "Deleted")
@error_responses(403, 404)
@bearer_auth()
async def delete_user(request: Request, user_id: str) -> HTTPResponse:
    """Delete a user: yourself, or anyone for an admin."""
    await _users(request).delete(await authenticate(request), user_id)
    return empty()


@auth.post("/token")
@openapi.definition(operation="issueToken", tag="auth", body=json_body(TokenRequest))
@response(200, ItemEnvelope[TokenPublic], "A bearer token", headers=CACHE_CONTROL)
@error_responses(401, 503, body=True)
async def issue_token(request: Request) -> HTTPResponse:
    """Log in: exchange an email and password for an access token.

    An unknown email and a wrong password get the same 401 INVALID_CREDENTIALS; an email
    longer than an address can be (RFC 5321) is 400 VALIDATION_FAILED.
    """
    credentials = parse_body(request, TokenRequest)
    auth_service: AuthService = request.app.ctx.auth_service
    token = await auth_service.log_in(credentials.email, credentials.password)
    body = TokenPublic(access_token=token.access_token, expires_in=token.expires_in)
    # RFC 6749 §5.1: a response carrying a token is never cached.
    return json_response(item_body(body), headers={"Cache-Control": "no-store"})


@jwks.get("/jwks.json")
@openapi.definition(operation="getJwks", tag="auth")
@response(200, JwksPublic, "The public keys that verify tokens", headers=CACHE_CONTROL)
@error_responses()
async def get_jwks(request: Request) -> HTTPResponse:
    """The public keys of token signatures (JWKS)."""
    keys: SigningKeys = request.app.ctx.signing_keys
    return json_response(keys.jwks(), headers={"Cache-Control": JWKS_CACHE_CONTROL})
