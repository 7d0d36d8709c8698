"""The caller's standing, asked of users-service by a service about to act on a token's claims.

An access token says what was true when it was issued, up to ``ACCESS_TOKEN_TTL_S`` ago.
Only users-service knows whether its session is still open, the account still active and
its role still admin. A service about to use admin powers, or to keep something the caller
creates, asks it first (``CallerCheck.confirm``): ``GET /api/users/me`` with the caller's
own token, which users-service answers by its own caller check. The answer is kept per token
for ``STANDING_CACHE_S`` (a few seconds), so a suspension, a demotion, a deletion or a logout
ends those powers everywhere within that time. Without an answer (users-service down) the
action is 503 UNAVAILABLE: a service does not guess who the caller is.

An API key is opaque: every service (and the gateway) asks users-service about it
(``CallerCheck.resolve_api_key``: ``GET /api/api-keys/current`` with the key itself) and
keeps the answer for the same few seconds, so a revoked key, or the key of a suspended,
demoted or deleted owner, stops working everywhere within ``STANDING_CACHE_S``.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import orjson
from pydantic import Field
from sanic import Request

from api_shared.auth import Principal, Role, authenticate, require_scope
from api_shared.errors import ForbiddenError, UnauthenticatedError
from api_shared.http import HttpSession, Replicas
from api_shared.settings import PlatformSettings, UrlList

ME_PATH = "/api/users/me"
CURRENT_API_KEY_PATH = "/api/api-keys/current"
MAX_CACHE_S = 30.0
USERS_UNAVAILABLE = "The user directory is unavailable; try again shortly."


def refuse_as_users_service_did(
    status: int, ended: str = "This token's session has ended; log in again."
) -> None:
    """users-service refused the caller's own credential (401: its session ended, the key
    was revoked, or the account is gone; 403: the account is suspended): the caller's refusal
    here too."""
    if status == 401:
        raise UnauthenticatedError(ended, token_sent=True)
    if status == 403:
        raise ForbiddenError("This account is suspended.")


KEY_REFUSED = "This API key is not valid: it is unknown, revoked or expired."


class StandingSettings(PlatformSettings):
    """Mixed into the settings of a service that asks users-service about its callers."""

    # The same variable as the gateway's, so the same form: ``http://a:8001,http://b:8001``.
    users_service_urls: UrlList = Field(
        default=["http://127.0.0.1:8001"], validation_alias="USERS_SERVICE_URL", min_length=1
    )
    # How long users-service's answer about one token is believed: the most time a lost
    # admin role, a suspension or an ended session may still be honoured here.
    standing_cache_s: float = Field(
        default=5.0, ge=0, le=MAX_CACHE_S, validation_alias="STANDING_CACHE_S"
    )


class CallerConfirmation(Protocol):
    """``CallerCheck``, or a fake in unit tests."""

    async def confirm(self, principal: Principal, authorization: str) -> Principal: ...

    async def resolve_api_key(self, key: str) -> Principal: ...


class CallerCheck:
    """Confirms a verified token's principal with users-service, caching answers briefly."""

    def __init__(
        self,
        users: Replicas,
        *,
        cache_s: float,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.users = users
        self.cache_s = cache_s
        self.max_entries = max_entries
        self.clock = clock
        self._answers: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    @classmethod
    def of(cls, http: HttpSession, settings: StandingSettings) -> CallerCheck:
        users = Replicas(
            http, settings.users_service_urls, name="users-service", message=USERS_UNAVAILABLE
        )
        return cls(users, cache_s=settings.standing_cache_s)

    async def confirm(self, principal: Principal, authorization: str) -> Principal:
        """``principal`` with the role its account has now; 401 when its session ended or
        the account is gone, 403 when the account is suspended, 503 without an answer."""
        kept = self._answers.get(authorization)
        if kept is not None and self.clock() < kept[1]:
            return kept[0]
        answer = await self.users.get(ME_PATH, {"Authorization": authorization})
        refuse_as_users_service_did(answer.status)
        if answer.status != 200:
            raise self.users.unavailable(f"{ME_PATH} answered {answer.status}")
        confirmed = dataclasses.replace(principal, role=self._role(principal, answer.body))
        self._remember(authorization, confirmed)
        return confirmed

    async def resolve_api_key(self, key: str) -> Principal:
        """The principal of an API key as users-service describes it now (its owner, the
        owner's role, the key's scopes); 401 for a key it refuses, 403 for a suspended
        owner, 503 without an answer. Kept like ``confirm``'s answers."""
        authorization = f"Bearer {key}"
        kept = self._answers.get(authorization)
        if kept is not None and self.clock() < kept[1]:
            return kept[0]
        answer = await self.users.get(CURRENT_API_KEY_PATH, {"Authorization": authorization})
        refuse_as_users_service_did(answer.status, KEY_REFUSED)
        if answer.status != 200:
            raise self.users.unavailable(f"{CURRENT_API_KEY_PATH} answered {answer.status}")
        principal = self._key_principal(answer.body)
        self._remember(authorization, principal)
        return principal

    def _key_principal(self, body: bytes) -> Principal:
        try:
            key = orjson.loads(body)["data"]
            owner, scopes = key["owner"], key["scopes"]
            if not (isinstance(key["id"], str) and isinstance(owner["id"], str)):
                raise ValueError("ids must be strings")
            if not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
                raise ValueError("scopes must be a list of strings")
            return Principal(
                subject=owner["id"],
                role=Role(owner["role"]),
                api_key_id=key["id"],
                scopes=frozenset(scopes),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise self.users.unavailable(f"{CURRENT_API_KEY_PATH} answered {error!r}") from None

    def _role(self, principal: Principal, body: bytes) -> Role:
        try:
            user = orjson.loads(body)["data"]
            if user["id"] != principal.subject or user["isActive"] is not True:
                raise ValueError("another user, or a suspended one")
            return Role(user["role"])
        except (ValueError, KeyError, TypeError) as error:
            raise self.users.unavailable(f"{ME_PATH} answered {error!r}") from None

    def _remember(self, authorization: str, principal: Principal) -> None:
        if self.cache_s <= 0:
            return
        self._answers[authorization] = (principal, self.clock() + self.cache_s)
        self._answers.move_to_end(authorization)
        if len(self._answers) > self.max_entries:
            self._answers.popitem(last=False)  # the oldest answer goes first


async def confirmed_caller(
    request: Request, check: CallerConfirmation, *, writes: bool, scope: str
) -> Principal:
    """The request's caller: its verified token's principal, confirmed with users-service
    when the request writes (``writes``) or the token claims admin powers; an API key's,
    which users-service has just described, when the key has ``scope``.

    A customer reading their own data goes unconfirmed: the token alone says whose it is.
    """
    principal = require_scope(await authenticate(request), scope)
    if principal.is_api_key:
        return principal  # resolved with users-service (api_shared.auth), answers kept briefly
    if writes or principal.is_admin:
        return await check.confirm(principal, request.headers.get("authorization", ""))
    return principal
