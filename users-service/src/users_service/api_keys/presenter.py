"""How API keys are answered over HTTP: the envelopes and headers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import item_body, json_response
from users_service.api_keys.material import split_scopes
from users_service.api_keys.schemas import ApiKeyOwner, ApiKeyPublic, ApiKeyWithSecret
from users_service.models import ApiKey
from users_service.responses import NO_STORE


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
