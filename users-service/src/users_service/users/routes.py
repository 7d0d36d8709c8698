"""HTTP handlers of the users API: parse, call the service, shape the response."""

from __future__ import annotations

from typing import Protocol

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

import api_shared.openapi as spec
from api_shared.auth import Access, Role, Scope, caller, optional_principal
from api_shared.paging import parse_request_page
from api_shared.transactions import one_connection
from api_shared.validation import parse_body
from users_service.responses import no_content
from users_service.sessions import caller_of, client_of
from users_service.users.listing import DEFAULT_SORT, FILTERS, SORTS
from users_service.users.presenter import (
    created_user_response,
    user_response,
    users_page_response,
)
from users_service.users.schemas import UserCreate, UserDeletion, UserPublic, UserUpdate
from users_service.users.services import NO_DELETION_BODY, UserService

users = Blueprint("users", url_prefix="/api/users")

USER_ID = spec.path_id("user_id", "The user's id; one that is not a UUID names no user.")
# Who may call each route: an API key needs users:read to read, users:write to write (a
# sign-up sends no credential; one that does is a writer).
READ_USERS = Access(Scope.USERS_READ)
WRITE_USERS = Access(Scope.USERS_WRITE)


class _Context(Protocol):
    """What these handlers read of the service's context."""

    @property
    def users(self) -> UserService: ...


def _users(request: Request) -> UserService:
    context: _Context = request.app.ctx.context
    return context.users


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
    principal = await optional_principal(request)
    if principal is not None:
        WRITE_USERS.admit(principal)
    user = await _users(request).sign_up(parse_body(request, UserCreate), principal)
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
    principal = await caller(request, READ_USERS)
    service = _users(request)
    async with one_connection():  # its three reads: the caller, the page, the total
        lister = await service.lister(principal)  # before the query: 403 tells nothing of it
        page = parse_request_page(request, sorts=SORTS, default_sort=DEFAULT_SORT, filters=FILTERS)
        rows, total = await service.list_users(lister, page)
    return users_page_response(rows, total, page)


@users.get("/me")
@spec.get_operation("getMe", "users", UserPublic, "The caller's user", errors=(403,))
async def get_me(request: Request) -> HTTPResponse:
    """The caller's own user (403 when the account is suspended). An API key needs
    `users:read`."""
    _, user = await caller_of(request, READ_USERS)
    return user_response(user)


@users.get("/<user_id:str>")
@spec.get_operation("getUser", "users", UserPublic, "The user", path=[USER_ID], errors=(403, 404))
async def get_user(request: Request, user_id: str) -> HTTPResponse:
    """One user: yourself, or anyone for an admin. An API key needs `users:read`."""
    principal = await caller(request, READ_USERS)
    user = await _users(request).get(principal, user_id)
    return user_response(user)


@users.patch("/<user_id:str>")
@spec.change_operation(
    "updateUser",
    "users",
    UserPublic,
    "The updated user",
    body=spec.json_body(UserUpdate, media_types=(spec.JSON, spec.MERGE_PATCH_JSON)),
    path=[USER_ID],
    errors=(401, 403, 404, 409, 429, 503),
)
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
    principal = await caller(request, WRITE_USERS)
    data = parse_body(request, UserUpdate)
    user = await _users(request).update(principal, user_id, data, client=client_of(request))
    return user_response(user)


@users.delete("/<user_id:str>")
@openapi.definition(
    operation="deleteUser",
    tag="users",
    parameter=USER_ID,
    # Optional: an admin deleting another user sends none.
    body=spec.json_body(UserDeletion, required=False),
)
@no_content("Deleted", 401, 403, 404, 429, 503, body=True)
@spec.bearer_auth()
async def delete_user(request: Request, user_id: str) -> HTTPResponse:
    """Delete a user: yourself, with `currentPassword` in the body; anyone, for an admin.

    Deleting your own account (admins included) needs `currentPassword` (400
    VALIDATION_FAILED without it, 401 INVALID_CREDENTIALS when wrong); an admin deleting
    another user sends no body. The user's sessions end with it; their orders that may no
    longer be deleted (confirmed, shipped, delivered) are kept, anonymised (docs/api.md).
    An API key needs `users:write`, and never deletes its own owner (403 FORBIDDEN).
    """
    principal = await caller(request, WRITE_USERS)
    data = parse_body(request, UserDeletion) if request.body else NO_DELETION_BODY
    await _users(request).delete(principal, user_id, data, client=client_of(request))
    return empty()
