"""users-service's context: the parts its handlers work with, built once by ``wire``.

``wire`` only composes: the shared parts (the password slots, the budgets) are built here,
each resource's own by its package's wiring (``users``, ``sessions``, ``api_keys``,
``account_mail``), in the order their dependencies ask.
"""

from __future__ import annotations

from dataclasses import dataclass

from argon2 import PasswordHasher

from api_shared.auth import TokenVerifier
from api_shared.context import Resource
from api_shared.events.runtime import Events
from api_shared.ratelimit import Buckets, Limiter, MemoryBuckets, RedisBuckets, shared_buckets
from users_service.account_mail import (
    EmailVerificationService,
    PasswordResetService,
    wire_account_mail,
)
from users_service.api_keys import ApiKeyRepository, ApiKeyService, wire_api_keys
from users_service.budgets import Throttle
from users_service.passwords import Passwords
from users_service.sessions import SessionService, SigningKeys, load_signing_keys, wire_sessions
from users_service.settings import Settings
from users_service.users import AuthService, UserService, user_store, wire_users


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    verifier: TokenVerifier  # checks tokens against the keys the service publishes
    signing_keys: SigningKeys
    passwords: Passwords
    users: UserService
    auth: AuthService
    sessions: SessionService
    # Resolves the API keys requests send (api_shared.auth.authenticate asks it), and the
    # caller's own keys.
    api_keys: ApiKeyService
    verification: EmailVerificationService
    resets: PasswordResetService
    throttle: Throttle  # users-service's own rate limits (users_service.budgets)
    events: Events | None  # the outbox relay to the USERS stream; None with EVENTS_ENABLED=false
    # The password threads, the limits (their Redis client, their metrics), the session
    # purge, the reset requests' worker, the mail sender, the events, the configured admin.
    resources: tuple[Resource, ...]


def wire(
    settings: Settings,
    *,
    signing_keys: SigningKeys | None = None,
    passwords: Passwords | None = None,
) -> Context:
    """Build every part from ``settings``; a keyword replaces that part (tests pass fakes)."""
    keys = signing_keys or load_signing_keys(settings)
    passwords = passwords or password_slots(settings)
    throttle, buckets = _throttle(settings)
    store = user_store(settings)
    sessions = wire_sessions(settings, keys, store, throttle)
    key_store = ApiKeyRepository()
    mail = wire_account_mail(
        settings, store, sessions.sessions, passwords, throttle, keys=key_store
    )
    users = wire_users(settings, store, passwords, sessions.sessions, throttle, mail=mail.mail)
    return Context(
        settings=settings,
        verifier=sessions.verifier,
        signing_keys=keys,
        passwords=passwords,
        users=users.users,
        auth=users.auth,
        sessions=sessions.sessions,
        api_keys=wire_api_keys(settings, key_store, users.users),
        verification=mail.verification,
        resets=mail.resets,
        throttle=throttle,
        events=users.events,
        resources=(
            passwords,
            *([buckets] if buckets is not None else []),
            throttle,
            sessions.purge,
            *mail.resources,
            *users.resources,
        ),
    )


def _throttle(settings: Settings) -> tuple[Throttle, RedisBuckets | None]:
    """The budgets, in Redis when REDIS_URL is set (``shared_buckets``), else in memory; the
    Redis ones are a resource to close."""
    shared = shared_buckets(settings.redis_url)
    buckets: Buckets = shared if shared is not None else MemoryBuckets()
    throttle = Throttle(Limiter(buckets), settings.budgets)
    if shared is not None:
        shared.on_error = throttle.count_store_error
    return throttle, shared


def password_slots(settings: Settings) -> Passwords:
    """Argon2id with the configured costs, in ``settings.argon2_slots`` slots."""
    return Passwords(
        PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        ),
        slots=settings.argon2_slots,
        wait_s=settings.argon2_slot_wait_s,
    )
