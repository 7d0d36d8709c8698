"""users-service's context: the parts its handlers work with, built once by ``wire``."""

from __future__ import annotations

from dataclasses import dataclass

from argon2 import PasswordHasher
from sanic import Request

from api_shared.auth import StaticKeySource, TokenVerifier
from api_shared.background import Periodic
from api_shared.context import Resource
from api_shared.database import SchemaCheck
from api_shared.events.outbox import Outbox
from api_shared.events.runtime import Events, events_of
from api_shared.events.streams import USERS
from api_shared.mail.outbox import MailOutbox
from api_shared.mail.sender import MailSender
from api_shared.ratelimit import Buckets, Limiter, MemoryBuckets, RedisBuckets, shared_buckets
from users_service.account_repository import AccountTokenRepository
from users_service.admin_bootstrap import AdminBootstrap
from users_service.api_key_repository import ApiKeyRepository
from users_service.api_keys import ApiKeyService
from users_service.budgets import Throttle
from users_service.database import MIGRATIONS
from users_service.events import CATALOG, UserEvents
from users_service.keys import SigningKeys, load_signing_keys
from users_service.mail_templates import Links
from users_service.passwords import Passwords
from users_service.recovery import (
    AccountMail,
    EmailVerificationService,
    PasswordResetService,
    ResetRequestWorker,
)
from users_service.repository import UserRepository
from users_service.services import AuthService, UserService
from users_service.session_repository import SessionRepository
from users_service.sessions import SessionService
from users_service.settings import Settings
from users_service.tokens import TokenIssuer


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
    repository = UserRepository(UserEvents(Outbox(CATALOG, enabled=settings.events_enabled)))
    issuer = TokenIssuer(
        keys,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        ttl_s=settings.access_token_ttl_s,
    )
    throttle, shared_buckets = _throttle(settings)
    sessions = SessionService(
        SessionRepository(),
        repository,
        issuer,
        throttle,
        refresh_ttl_s=settings.refresh_token_ttl_s,
        max_lifetime_s=settings.session_max_lifetime_s,
    )
    # Every replica may purge: deleting what has ended is idempotent.
    purge = Periodic("purge_sessions", sessions.purge, settings.session_purge_interval_s)
    events = events_of(settings, USERS, name="users-service")
    api_keys = ApiKeyRepository()
    mail = AccountMail(
        AccountTokenRepository(),
        MailOutbox(domain=settings.mail_domain),
        Links(settings.frontend_url),
        settings.recovery_policy,
        keys=api_keys,
    )
    users = UserService(repository, passwords, sessions, throttle, mail=mail)
    resets = PasswordResetService(mail, repository, sessions, passwords, throttle)
    # Every replica handles the queue (SKIP LOCKED) and sends mail (each row once).
    reset_worker = ResetRequestWorker(
        resets,
        interval_s=settings.reset_request_interval_s,
        purge_every_s=settings.session_purge_interval_s,
    )
    resources: list[Resource] = [passwords, throttle, purge, reset_worker, MailSender(settings)]
    if shared_buckets is not None:
        resources.insert(1, shared_buckets)
    if events is not None:
        resources.append(events)
    admin = settings.admin
    if admin is not None:
        resources.append(AdminBootstrap(users, admin, SchemaCheck(MIGRATIONS)))
    return Context(
        settings=settings,
        # The service checks its own tokens against the keys it publishes: no HTTP to itself.
        verifier=TokenVerifier(
            StaticKeySource(keys.public_keys),
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        ),
        signing_keys=keys,
        passwords=passwords,
        users=users,
        auth=AuthService(repository, passwords, sessions, throttle),
        sessions=sessions,
        api_keys=ApiKeyService(api_keys, users, policy=settings.key_policy),
        verification=EmailVerificationService(mail, repository),
        resets=resets,
        throttle=throttle,
        events=events,
        resources=tuple(resources),
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


def context_of(request: Request) -> Context:
    """The typed context of the app serving ``request``."""
    context: Context = request.app.ctx.context
    return context
