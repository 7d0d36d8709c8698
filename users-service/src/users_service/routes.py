"""HTTP handlers of the users, token and key APIs: parse, call the service, shape the response."""

from __future__ import annotations

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty

from api_shared.auth import authenticate, optional_principal
from api_shared.paging import page_body
from api_shared.representation import item_body, json_response
from api_shared.validation import parse_body
from users_service.keys import SigningKeys
from users_service.models import User
from users_service.schemas import TokenPublic, TokenRequest, UserCreate, UserPublic, UserUpdate
from users_service.services import AuthService, UserService

users = Blueprint("users", url_prefix="/api/users")
auth = Blueprint("auth", url_prefix="/api/auth")
jwks = Blueprint("jwks", url_prefix="/.well-known")

# Verifiers refetch the JWKS when they meet an unknown kid, so a short cache is safe.
JWKS_CACHE_CONTROL = "public, max-age=300"


def _users(request: Request) -> UserService:
    service: UserService = request.app.ctx.user_service
    return service


def _public(user: User) -> dict[str, object]:
    return UserPublic.model_validate(user).wire()


@users.post("/")
async def create_user(request: Request) -> HTTPResponse:
    caller = await optional_principal(request)
    user = await _users(request).sign_up(parse_body(request, UserCreate), caller)
    return json_response(
        item_body(_public(user)), status=201, headers={"Location": f"/api/users/{user.id}"}
    )


@users.get("/")
async def list_users(request: Request) -> HTTPResponse:
    caller = await authenticate(request)
    query = request.get_query_args(keep_blank_values=True)
    page = await _users(request).list_users(caller, query)
    return json_response(page_body([_public(u) for u in page.users], page.total, page.request))


@users.get("/<user_id:str>")
async def get_user(request: Request, user_id: str) -> HTTPResponse:
    user = await _users(request).get(await authenticate(request), user_id)
    return json_response(item_body(_public(user)))


@users.patch("/<user_id:str>")
async def update_user(request: Request, user_id: str) -> HTTPResponse:
    caller = await authenticate(request)
    user = await _users(request).update(caller, user_id, parse_body(request, UserUpdate))
    return json_response(item_body(_public(user)))


@users.delete("/<user_id:str>")
async def delete_user(request: Request, user_id: str) -> HTTPResponse:
    await _users(request).delete(await authenticate(request), user_id)
    return empty()


@auth.post("/token")
async def issue_token(request: Request) -> HTTPResponse:
    credentials = parse_body(request, TokenRequest)
    auth_service: AuthService = request.app.ctx.auth_service
    token = await auth_service.log_in(credentials.email, credentials.password)
    body = TokenPublic(access_token=token.access_token, expires_in=token.expires_in)
    # RFC 6749 §5.1: a response carrying a token is never cached.
    return json_response(item_body(body), headers={"Cache-Control": "no-store"})


@jwks.get("/jwks.json")
async def get_jwks(request: Request) -> HTTPResponse:
    keys: SigningKeys = request.app.ctx.signing_keys
    return json_response(keys.jwks(), headers={"Cache-Control": JWKS_CACHE_CONTROL})
