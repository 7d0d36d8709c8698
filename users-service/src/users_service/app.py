"""users-service application factory: wires settings, keys, passwords, services and routes."""

from __future__ import annotations

import logging

from argon2 import PasswordHasher
from tortoise import Tortoise

from api_shared.auth import StaticKeySource, TokenVerifier, install_authentication
from api_shared.background import install_periodic
from api_shared.database import SchemaCheck, install_database
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.settings import ConfigurationError
from api_shared.types import App
from users_service.database import database_config
from users_service.keys import load_signing_keys
from users_service.passwords import Passwords
from users_service.repository import UserRepository
from users_service.routes import auth, jwks, users
from users_service.services import AdminEmailTakenError, AuthService, UserService
from users_service.session_repository import SessionRepository
from users_service.sessions import SessionService
from users_service.settings import Settings
from users_service.tokens import TokenIssuer

logger = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> App:
    settings = settings or Settings()
    app = create_service_app("users-service", settings)
    app.config.REQUEST_MAX_SIZE = settings.body_limit
    install_json_media_rules(app)
    install_database(app, database_config(settings))

    keys = load_signing_keys(settings)
    # The service checks its own tokens against the keys it publishes: no HTTP to itself.
    verifier = TokenVerifier(
        StaticKeySource(keys.public_keys),
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )
    install_authentication(app, verifier)

    passwords = install_passwords(app, settings)
    repository = UserRepository()
    issuer = TokenIssuer(
        keys,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        ttl_s=settings.access_token_ttl_s,
    )
    sessions = SessionService(
        SessionRepository(),
        repository,
        issuer,
        refresh_ttl_s=settings.refresh_token_ttl_s,
        max_lifetime_s=settings.session_max_lifetime_s,
    )
    app.ctx.signing_keys = keys
    app.ctx.session_service = sessions
    app.ctx.user_service = UserService(repository, passwords, sessions)
    app.ctx.auth_service = AuthService(repository, passwords, sessions)
    # Every replica may purge: deleting what has ended is idempotent.
    app.ctx.session_purge = install_periodic(
        app, "purge_sessions", sessions.purge, settings.session_purge_interval_s
    )
    install_admin_bootstrap(app, app.ctx.user_service, settings)

    app.blueprint(users)
    app.blueprint(auth)
    app.blueprint(jwks)
    return app


def install_passwords(app: App, settings: Settings) -> Passwords:
    """Argon2id in ``settings.argon2_slots`` slots; their threads end with the server."""
    passwords = Passwords(
        PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        ),
        slots=settings.argon2_slots,
        wait_s=settings.argon2_slot_wait_s,
    )

    async def close_passwords(app: App) -> None:
        passwords.close()

    app.register_listener(close_passwords, "after_server_stop")
    return passwords


class _StartRefusalFilter(logging.Filter):
    """Sanic logs whatever stops its start-up with a traceback; a refusal is not a bug.

    The runner prints the refusal as one line (as it does for settings) and exits 2.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ConfigurationError))


START_REFUSAL_FILTER = _StartRefusalFilter()


def install_admin_bootstrap(app: App, service: UserService, settings: Settings) -> None:
    """Ensure the configured admin once the database is open, before serving.

    When ADMIN_EMAIL belongs to an account that is not an admin, whoever registered it
    first is neither promoted nor has their password reset: production refuses to start
    (the operator must choose), development starts without the admin, with a warning.
    """
    admin = settings.admin
    if admin is None:
        return
    logging.getLogger("sanic.error").addFilter(START_REFUSAL_FILTER)  # once: same object

    async def ensure_admin(app: App) -> None:
        schema: SchemaCheck = app.ctx.schema
        try:
            await schema()
        except LookupError:
            # A new version starting while its migration Job runs: the admin's row has the
            # old columns until then. /ready says 503 meanwhile; ensure it once migrated.
            logger.warning("schema behind its migrations: the admin is ensured once they ran")
            app.add_task(ensure_when_migrated(schema), name="ensure_admin")
            return
        problem = await ensure()
        if problem is None:
            return
        if settings.is_production:
            # The server never starts, so its stop listeners never run: close what would
            # keep the process alive (aiosqlite's thread) before refusing.
            await Tortoise.close_connections()
            service.passwords.close()
            raise ConfigurationError(
                f"{problem}: set another ADMIN_EMAIL, or make that account an admin through the API"
            )
        logger.warning("%s; starting without the configured admin", problem)

    async def ensure_when_migrated(schema: SchemaCheck) -> None:
        await schema.wait()
        problem = await ensure()
        if problem is not None:  # serving already: nothing left to refuse
            logger.error("%s; serving without the configured admin", problem)

    async def ensure() -> str | None:
        """Ensure the admin; the problem when ADMIN_EMAIL belongs to a non-admin."""
        try:
            await service.ensure_admin(admin.email, admin.password.get_secret_value())
        except AdminEmailTakenError:
            return (
                f"ADMIN_EMAIL {admin.email} belongs to an existing account that is not an "
                "admin; it is not promoted and its password is not reset"
            )
        return None

    # Below the ORM's own start-up listener (priority 0), which opens the connections.
    app.register_listener(ensure_admin, "before_server_start", priority=-10)
