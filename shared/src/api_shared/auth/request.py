"""The caller of a request, from its ``Authorization`` header: an access token verified by
the context's verifier, or an API key handed to the context's ``api_keys`` resolver (told
apart by the prefix). The principal is kept on the request, so it is worked out once.
"""

from __future__ import annotations

from typing import Protocol

from sanic import Request

from api_shared.auth.api_keys import API_KEY_PATTERN, ApiKeyResolver, is_api_key
from api_shared.auth.principal import Principal
from api_shared.auth.verifier import TokenVerifier
from api_shared.errors import UnauthenticatedError


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there is no header.

    A header that is present but not a well-formed Bearer credential is UNAUTHENTICATED.
    """
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise UnauthenticatedError("The Authorization header must be 'Bearer <token>'.")
    return token


class Authenticating(Protocol):
    """A service's context whose handlers call ``authenticate``: the app's one verifier.

    A context that accepts API keys also has ``api_keys`` (an ``ApiKeyResolver``); one
    without it answers every key 401.
    """

    @property
    def verifier(self) -> TokenVerifier: ...


async def _api_key_principal(context: object, key: str) -> Principal:
    resolver: ApiKeyResolver | None = getattr(context, "api_keys", None)
    if resolver is None:
        raise UnauthenticatedError("API keys are not accepted here.", token_sent=True)
    if API_KEY_PATTERN.fullmatch(key) is None:
        raise UnauthenticatedError("The API key is malformed.", token_sent=True)
    return await resolver.resolve_api_key(key)


async def authenticate(request: Request) -> Principal:
    """The caller, from the request's own bearer token; UNAUTHENTICATED without a valid one."""
    principal: Principal | None = getattr(request.ctx, "principal", None)
    if principal is not None:
        return principal
    credentials: list[str] = request.headers.getall("authorization", [])
    if len(credentials) > 1:
        # Which one to believe would be ambiguous (a proxy may keep the other): refuse both.
        raise UnauthenticatedError("Send a single Authorization header.")
    token = bearer_token(credentials[0] if credentials else None)
    if token is None:
        raise UnauthenticatedError()
    # The context's verifier (api_shared.context.install_context put the context there).
    context: Authenticating = request.app.ctx.context
    if is_api_key(token):
        principal = await _api_key_principal(context, token)
    else:
        principal = await context.verifier.verify(token)
    request.ctx.principal = principal
    return principal


async def optional_principal(request: Request) -> Principal | None:
    """The caller when a token is sent (it must then be valid), else None: for public routes."""
    if request.headers.get("authorization") is None:
        return None
    return await authenticate(request)
