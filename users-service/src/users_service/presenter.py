"""How users, tokens, sessions and keys are answered over HTTP: the envelopes and headers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import WireEncoder, item_body, json_response
from users_service.api_keys import split_scopes
from users_service.models import ApiKey, Session, User
from users_service.ports import SessionTokens, UserRow
from users_service.schemas import (
    ApiKeyOwner,
    ApiKeyPublic,
    ApiKeyWithSecret,
    SessionPublic,
    TokenPublic,
    UserPublic,
)

# RFC 6749 §5.1: a response carrying a token is never cached.
NO_STORE = {"Cache-Control": "no-store"}
# Verifiers refetch the JWKS when they meet an unknown kid, so a short cache is safe.
JWKS_CACHE_CONTROL = "public, max-age=300"

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


def token_response(tokens: SessionTokens) -> HTTPResponse:
    body = TokenPublic(
        access_token=tokens.access_token,
        expires_in=tokens.expires_in,
        refresh_token=tokens.refresh_token,
        refresh_expires_in=tokens.refresh_expires_in,
    )
    return json_response(item_body(body), headers=NO_STORE)


def sessions_page_response(
    sessions: Sequence[Session], total: int, page: PageRequest, *, current: str | None
) -> HTTPResponse:
    """A page of sessions; ``current`` (the caller's token's ``sid``) is marked as such."""
    items = [
        SessionPublic.model_validate(
            {
                "id": session.id,
                "created_at": session.created_at,
                "last_used_at": session.last_used_at,
                "expires_at": session.expires_at,
                "user_agent": session.user_agent,
                "address": session.address,
                "current": str(session.id) == current,
            }
        ).wire()
        for session in sessions
    ]
    return json_response(page_body(items, total, page))


def jwks_response(document: Mapping[str, Any]) -> HTTPResponse:
    return json_response(document, headers={"Cache-Control": JWKS_CACHE_CONTROL})


def _api_key_fields(key: ApiKey, owner: ApiKeyOwner) -> dict[str, Any]:
    """A key's shown fields: never its hash."""
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "scopes": split_scopes(key.scopes),
        "owner": owner,
        "created_at": key.created_at,
        "expires_at": key.expires_at,
        "last_used_at": key.last_used_at,
    }


def api_key_response(key: ApiKey, owner: ApiKeyOwner) -> HTTPResponse:
    return json_response(item_body(ApiKeyPublic.model_validate(_api_key_fields(key, owner))))


def created_api_key_response(key: ApiKey, owner: ApiKeyOwner, secret: str) -> HTTPResponse:
    """A new key's answer: 201, the key with its secret (this once), and where it lives."""
    body = ApiKeyWithSecret.model_validate({**_api_key_fields(key, owner), "secret": secret})
    return json_response(
        item_body(body), status=201, headers={"Location": f"/api/api-keys/{key.id}", **NO_STORE}
    )


def api_keys_page_response(
    keys: Sequence[ApiKey], owner: ApiKeyOwner, total: int, page: PageRequest
) -> HTTPResponse:
    items = [ApiKeyPublic.model_validate(_api_key_fields(key, owner)).wire() for key in keys]
    return json_response(page_body(items, total, page))
