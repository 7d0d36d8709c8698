"""How users are answered over HTTP: the envelopes and headers."""

from __future__ import annotations

from collections.abc import Sequence

from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import WireEncoder, item_body, json_response
from users_service.models import User
from users_service.users.ports import UserRow
from users_service.users.schemas import UserPublic

# A page's rows as UserPublic writes them, without a model per row (the users list is hot).
_public_rows = WireEncoder(UserPublic)


def user_response(user: User) -> HTTPResponse:
    return json_response(item_body(UserPublic.model_validate(user)))


def created_user_response(user: User) -> HTTPResponse:
    """A sign-up's answer: 201, the user, and where it lives."""
    return json_response(
        item_body(UserPublic.model_validate(user)),
        status=201,
        headers={"Location": f"/api/users/{user.id}"},
    )


def users_page_response(rows: Sequence[UserRow], total: int, page: PageRequest) -> HTTPResponse:
    return json_response(page_body(_public_rows.rows(rows), total, page))
