"""API keys: making them, listing and revoking them, and resolving the key a request sends.

The rules are docs/api.md#api-keys; what a key is made of, api_keys.material (stored only as
its SHA-256: a leaked table gives no usable key). Its secret is shown once, in the answer
that creates it.

A key's scopes narrow what its owner's role allows and never widen it: every route decides
by the owner's role as it is now, then asks the key for the scope it needs. So any user may
grant any scope to their own keys: a customer's key with ``users:write`` still changes its
owner alone, and an admin's key acts as an admin only while its owner is one.

A key outlives the login that made it, so minting one is a person's sensitive act (GitHub's
"sudo mode"): an access token whose login (``auth_time``) is older than the policy's
``recent_authentication`` mints nothing without the password (403 REAUTHENTICATION_REQUIRED):
a token stolen from a log or a browser is no key for ever. A key minting a key (it holds
``api-keys:write``) has no password to give: what it mints can neither outscope nor outlive
it. And every key expires within the policy's ``max_lifetime``, unless its owner is one that
``no_expiry_for`` names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from api_shared.auth import Principal
from api_shared.errors import (
    ForbiddenError,
    InvalidStateError,
    NotFoundError,
    ReauthenticationRequiredError,
    UnauthenticatedError,
    ValidationFailedError,
)
from api_shared.ids import parse_id
from api_shared.paging import PageRequest
from api_shared.standing import KEY_REFUSED
from users_service.api_keys.lifetimes import key_expiry
from users_service.api_keys.material import (
    api_key_hash,
    join_scopes,
    new_api_key,
    split_scopes,
    well_formed,
)
from users_service.api_keys.ports import ApiKeyStore, NewApiKey, PasswordConfirmation
from users_service.api_keys.schemas import ApiKeyCreate
from users_service.models import API_KEY_PREFIX_LENGTH, ApiKey, User
from users_service.policies import KeyPolicy, NoExpiryFor
from users_service.sessions import Client, refuse_suspended, utc_now

logger = logging.getLogger(__name__)

MAX_KEYS_PER_USER = 50
# ``last_used_at`` is kept to the minute: at most one write a minute per key.
TOUCH_INTERVAL = timedelta(minutes=1)
API_KEY_SORT_FIELDS = {"createdAt": "created_at", "lastUsedAt": "last_used_at"}
API_KEY_SORTS = tuple(API_KEY_SORT_FIELDS)
API_KEY_DEFAULT_SORT = "-createdAt"
NOT_AN_API_KEY = "This request is not authenticated by an API key."
DEFAULT_KEY_POLICY = KeyPolicy(
    recent_authentication=timedelta(minutes=10),
    max_lifetime=timedelta(days=365),
    no_expiry_for=NoExpiryFor.NOBODY,
)
UNKNOWN_CLIENT = Client()  # a caller naming no address: charged as one unknown address
KEYS_SEND_NO_PASSWORD = "is a person's: an API key sends none"  # noqa: S105 - a message


class ApiKeyService:
    """The caller's keys (``caller`` is ``UserService.caller``'s row: active, current), and
    the resolution of the key a request presents (the Context's ``api_keys``, which
    api_shared.auth.authenticate asks)."""

    def __init__(
        self,
        store: ApiKeyStore,
        passwords: PasswordConfirmation,
        *,
        policy: KeyPolicy = DEFAULT_KEY_POLICY,
        max_per_user: int = MAX_KEYS_PER_USER,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.passwords = passwords
        self.policy = policy
        self.max_per_user = max_per_user
        self.clock = clock

    async def create(
        self,
        caller: User,
        principal: Principal,
        data: ApiKeyCreate,
        client: Client = UNKNOWN_CLIENT,
    ) -> tuple[ApiKey, str]:
        """A new key of the caller's and the key itself (to be shown once).

        A key creating a key grants only scopes it holds itself (403 naming the others), and
        expires no later than itself: a key must not mint a wider or a longer-lived one. A
        person's login may grant any scope (the module's docstring says why that never
        exceeds the owner's rights), if it is recent or confirms the password. The order:
        403s first, then the expiry (400), then the password (a hash verified last).
        """
        parent = await self._parent(principal)
        if principal.scopes is not None:
            lacking = sorted(set(data.scopes) - principal.scopes)
            if lacking:
                raise ForbiddenError(
                    "An API key can only grant scopes it holds; this one lacks "
                    + ", ".join(f"'{scope}'" for scope in lacking)
                    + "."
                )
        self._require_recent(principal, data.current_password)
        now = self.clock()
        expires_at = key_expiry(self.policy, caller, data, parent, now)
        if data.current_password is not None:
            await self.passwords.confirm_password(caller, data.current_password, client)
        key = new_api_key()
        stored = await self.store.add(
            NewApiKey(
                id=uuid4(),
                user_id=caller.id,
                name=data.name,
                prefix=key[:API_KEY_PREFIX_LENGTH],
                secret_hash=api_key_hash(key),
                scopes=join_scopes(data.scopes),
                created_at=now,
                expires_at=expires_at,
            ),
            limit=self.max_per_user,
        )
        if stored is None:
            raise InvalidStateError(
                f"A user holds at most {self.max_per_user} API keys; revoke one first."
            )
        logger.info(
            "api key created",
            extra={
                "event": "api_key_created",
                "user_id": str(caller.id),
                "api_key_id": str(stored.id),
                "scopes": split_scopes(stored.scopes),
                "by_api_key": principal.api_key_id,
            },
        )
        return stored, key

    async def _parent(self, principal: Principal) -> ApiKey | None:
        """The key making a key (None for a person's login); 401 once it is revoked."""
        if not principal.is_api_key:
            return None
        key_id, owner_id = parse_id(principal.api_key_id), parse_id(principal.subject)
        parent = (
            await self.store.get(key_id, owner_id)
            if key_id is not None and owner_id is not None
            else None
        )
        if parent is None:
            raise UnauthenticatedError(KEY_REFUSED, token_sent=True)
        return parent

    def _require_recent(self, principal: Principal, current_password: str | None) -> None:
        """403 REAUTHENTICATION_REQUIRED for a login older than the policy allows that sends
        no password; a key sends none (it is bounded by its own scopes and expiry)."""
        if principal.is_api_key:
            if current_password is not None:
                raise ValidationFailedError(
                    f"currentPassword {KEYS_SEND_NO_PASSWORD}",
                    fields={"currentPassword": KEYS_SEND_NO_PASSWORD},
                )
            return
        if current_password is not None:
            return  # confirmed once the rest of the request is known to be valid
        logged_in = principal.auth_time
        window = self.policy.recent_authentication
        if logged_in is None or self.clock() - datetime.fromtimestamp(logged_in, UTC) > window:
            raise ReauthenticationRequiredError(
                f"This needs a login within the last {_minutes(window)}: send currentPassword "
                "(your password) with the request, or log in again."
            )

    async def revoke_all(
        self, caller: User, principal: Principal, current_password: str | None, client: Client
    ) -> int:
        """Delete every key of the caller (a person's login, recent or with the password):
        each is refused from the next request on. How many there were."""
        self._require_recent(principal, current_password)
        if current_password is not None:
            await self.passwords.confirm_password(caller, current_password, client)
        revoked = await self.store.delete_all(caller.id)
        logger.info(
            "api keys revoked",
            extra={"event": "api_keys_revoked", "user_id": str(caller.id), "keys": revoked},
        )
        return revoked

    async def list(self, caller: User, page: PageRequest) -> tuple[Sequence[ApiKey], int]:
        """One page of the caller's keys, and how many they hold."""
        return await self.store.page(
            caller.id,
            order_by=page.sort.ordering(API_KEY_SORT_FIELDS),
            limit=page.limit,
            offset=page.offset,
        )

    async def get(self, caller: User, raw_id: str) -> ApiKey:
        """One of the caller's keys; another user's is NOT_FOUND, like one that is not."""
        key_id = parse_id(raw_id)
        key = await self.store.get(key_id, caller.id) if key_id is not None else None
        if key is None:
            raise _not_found()
        return key

    async def revoke(self, caller: User, raw_id: str) -> None:
        """Delete one of the caller's keys: it is refused from the next request on."""
        key_id = parse_id(raw_id)
        if key_id is None or not await self.store.delete(key_id, caller.id):
            raise _not_found()
        logger.info(
            "api key revoked",
            extra={
                "event": "api_key_revoked",
                "user_id": str(caller.id),
                "api_key_id": str(key_id),
            },
        )

    async def current(self, principal: Principal) -> ApiKey:
        """The key that authenticated the request (``principal``'s); NOT_FOUND for an access
        token, which is no key. Needs no scope: any valid key may describe itself."""
        key_id = parse_id(principal.api_key_id)
        owner_id = parse_id(principal.subject)
        if key_id is None or owner_id is None:
            raise NotFoundError(NOT_AN_API_KEY)
        key = await self.store.get(key_id, owner_id)
        if key is None:  # revoked since this request's key was resolved
            raise UnauthenticatedError(KEY_REFUSED, token_sent=True)
        return key

    async def resolve_api_key(self, key: str) -> Principal:
        """The principal of ``key`` (api_shared.auth.ApiKeyResolver): its owner with the role
        they have now, and its scopes. 401 for a key that is malformed, unknown (revoked, or
        its owner deleted) or expired; 403 when its owner is suspended."""
        found = await self.store.with_owner(api_key_hash(key)) if well_formed(key) else None
        now = self.clock()
        if found is None or (found[0].expires_at is not None and found[0].expires_at <= now):
            raise UnauthenticatedError(KEY_REFUSED, token_sent=True)
        stored, owner = found
        refuse_suspended(owner)
        since = now - TOUCH_INTERVAL
        if stored.last_used_at is None or stored.last_used_at < since:
            await self.store.touch(stored.id, now, unless_since=since)
        return Principal(
            subject=str(owner.id),
            role=owner.role,
            api_key_id=str(stored.id),
            scopes=frozenset(split_scopes(stored.scopes)),
        )


def _not_found() -> NotFoundError:
    return NotFoundError("You have no API key with this id.")


def _minutes(window: timedelta) -> str:
    minutes = window.total_seconds() / 60
    return "minute" if minutes == 1 else f"{minutes:g} minutes"
