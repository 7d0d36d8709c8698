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

A refusal (401, 403) is kept as briefly as a confirmation: made-up keys, each well-formed and
each unknown, would otherwise cost users-service a question apiece. Refusals are kept apart
from confirmations and bounded (the least recently used goes first), so a flood of made-up
keys can neither grow this process's memory nor push out the answers about real callers.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import ClassVar, Generic, Protocol, TypeVar

import orjson
from pydantic import Field
from sanic import Request

from api_shared.auth.access import Access
from api_shared.auth.principal import Principal, Role
from api_shared.auth.request import authenticate
from api_shared.errors import ForbiddenError, UnauthenticatedError
from api_shared.http import HttpSession, Replicas
from api_shared.settings import PlatformSettings, UrlList

ME_PATH = "/api/users/me"
CURRENT_API_KEY_PATH = "/api/api-keys/current"
MAX_CACHE_S = 30.0
USERS_UNAVAILABLE = "The user directory is unavailable; try again shortly."
SESSION_ENDED = "This token's session has ended; log in again."


def refuse_as_users_service_did(status: int, ended: str = SESSION_ENDED) -> None:
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

    family: ClassVar[str] = "Ports, upstreams and callers"

    # The same variable as the gateway's, so the same form: ``http://a:8001,http://b:8001``.
    users_service_urls: UrlList = Field(
        default=["http://127.0.0.1:8001"],
        validation_alias="USERS_SERVICE_URL",
        min_length=1,
        description="users-service's replicas, comma-separated, taken in turn (round robin): "
        "the gateway's upstream for users-service's routes, where orders-service checks that "
        "a user exists (`/users/{id}/orders`), and where each asks whether a caller is still "
        "what its token or API key says (an admin now, a key not revoked)",
    )
    # How long users-service's answer about one token or key, yes or no, is believed: the
    # most time a lost admin role, a suspension or an ended session may still be honoured
    # here (and a reinstated one still refused).
    standing_cache_s: float = Field(
        default=5.0,
        ge=0,
        le=MAX_CACHE_S,
        validation_alias="STANDING_CACHE_S",
        description="how long users-service's word on a caller, yes or no, is kept: the most "
        "time a suspension, demotion, deletion or logout leaves an admin's powers or a "
        "writer's token working here, and how long a refused API key is refused without "
        "asking again",
    )


def users_service(http: HttpSession, urls: Sequence[str]) -> Replicas:
    """users-service's replicas (``USERS_SERVICE_URL``), asked through ``http`` in turn: 503
    UNAVAILABLE when none answers."""
    return Replicas(http, urls, name="users-service", message=USERS_UNAVAILABLE)


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
        max_refusals: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.users = users
        self.cache_s = cache_s
        self.clock = clock
        self._answers: _Kept[Principal] = _Kept(max_entries)
        self._refusals: _Kept[int] = _Kept(max_refusals)  # users-service's status: 401, 403

    @classmethod
    def of(cls, http: HttpSession, settings: StandingSettings) -> CallerCheck:
        return cls(
            users_service(http, settings.users_service_urls), cache_s=settings.standing_cache_s
        )

    async def confirm(self, principal: Principal, authorization: str) -> Principal:
        """``principal`` with the role its account has now; 401 when its session ended or
        the account is gone, 403 when the account is suspended, 503 without an answer."""
        kept = self._kept(authorization)
        if kept is not None:
            return kept
        answer = await self.users.get(ME_PATH, {"Authorization": authorization})
        self._refuse(authorization, answer.status)
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
        kept = self._kept(authorization, KEY_REFUSED)
        if kept is not None:
            return kept
        answer = await self.users.get(CURRENT_API_KEY_PATH, {"Authorization": authorization})
        self._refuse(authorization, answer.status, KEY_REFUSED)
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

    def _kept(self, authorization: str, ended: str = SESSION_ENDED) -> Principal | None:
        """The principal kept for ``authorization``; the refusal kept for it, raised; else
        None (ask users-service)."""
        now = self.clock()
        refused = self._refusals.get(authorization, now)
        if refused is not None:
            refuse_as_users_service_did(refused, ended)
        return self._answers.get(authorization, now)

    def _refuse(self, authorization: str, status: int, ended: str = SESSION_ENDED) -> None:
        """Keep users-service's refusal (401, 403), then raise it; nothing for other answers."""
        if status in (401, 403) and self.cache_s > 0:
            self._refusals.put(authorization, status, self.clock() + self.cache_s)
        refuse_as_users_service_did(status, ended)

    def _remember(self, authorization: str, principal: Principal) -> None:
        if self.cache_s > 0:
            self._answers.put(authorization, principal, self.clock() + self.cache_s)


T = TypeVar("T")


class _Kept(Generic[T]):
    """Answers kept until their expiry, at most ``max_entries``: past that the least recently
    used goes first, so no caller, however many credentials it makes up, grows this."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[T, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, now: float) -> T | None:
        kept = self._entries.get(key)
        if kept is None:
            return None
        if now >= kept[1]:
            del self._entries[key]  # expired: asked again, and no longer held
            return None
        self._entries.move_to_end(key)
        return kept[0]

    def put(self, key: str, value: T, expires: float) -> None:
        self._entries[key] = (value, expires)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


class Confirming(Protocol):
    """A service's context whose routes confirm their callers: its ``standing``."""

    @property
    def standing(self) -> CallerConfirmation: ...


async def confirmed_caller(request: Request, access: Access) -> Principal:
    """The request's caller as ``access`` admits it (api_shared.auth.caller), confirmed with
    users-service by the context's ``standing`` when ``access.confirm`` (a write, a stream)
    or the token claims admin powers; an API key's, which users-service has just described.

    A customer reading their own data goes unconfirmed: the token alone says whose it is.
    """
    principal = access.admit(await authenticate(request))
    if principal.is_api_key:
        return principal  # resolved with users-service (api_shared.auth), answers kept briefly
    if access.confirm or principal.is_admin:
        context: Confirming = request.app.ctx.context
        return await context.standing.confirm(principal, request.headers.get("authorization", ""))
    return principal
