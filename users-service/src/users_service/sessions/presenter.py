"""How tokens, sessions and the signing keys are answered over HTTP: the envelopes and
headers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sanic.response import HTTPResponse

from api_shared.paging import PageRequest, page_body
from api_shared.representation import item_body, json_response
from users_service.models import Session
from users_service.responses import NO_STORE
from users_service.sessions.ports import SessionTokens
from users_service.sessions.schemas import SessionPublic, TokenPublic

# Verifiers refetch the JWKS when they meet an unknown kid, so a short cache is safe.
JWKS_CACHE_CONTROL = "public, max-age=300"


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
