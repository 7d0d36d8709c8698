"""HTTP handlers of the users API: parse, call the service, shape the response."""

from __future__ import annotations

from sanic import Blueprint, Request
from sanic.response import HTTPResponse

from api_shared.representation import item_body, json_response
from api_shared.validation import parse_body
from users_service.schemas import UserCreate, UserPublic
from users_service.services import UserService

users = Blueprint("users", url_prefix="/api/users")


def _service(request: Request) -> UserService:
    service: UserService = request.app.ctx.user_service
    return service


@users.post("/")
async def create_user(request: Request) -> HTTPResponse:
    user = await _service(request).sign_up(parse_body(request, UserCreate))
    body = item_body(UserPublic.model_validate(user))
    return json_response(body, status=201, headers={"Location": f"/api/users/{user.id}"})


@users.get("/<user_id:str>")
async def get_user(request: Request, user_id: str) -> HTTPResponse:
    user = await _service(request).get(user_id)
    return json_response(item_body(UserPublic.model_validate(user)))
