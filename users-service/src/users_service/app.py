"""users-service application factory: wires settings, keys, passwords, services and routes."""

from __future__ import annotations

from argon2 import PasswordHasher

from api_shared.auth import StaticKeySource, TokenVerifier, install_authentication
from api_shared.background import install_periodic
from api_shared.database import install_database
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.types import App
from users_service.database import database_config
from users_service.keys import load_signing_keys
from users_service.passwords import Passwords
from users_service.repository import UserRepository
from users_service.routes import auth, jwks, users
from users_service.services import AuthService, UserService
from users_service.session_repository import SessionRepository
from users_service.sessions import SessionService
from users_service.settings import Settings
from users_service.tokens import TokenIssuer


def create_app(settings: Settings | None = None) -> App:
    settings = settings or Settings()
    app = create_service_app("users-service", settings)
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

    passwords = Passwords(
        PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        )
    )
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


def install_admin_bootstrap(app: App, service: UserService, settings: Settings) -> None:
    """Ensure the configured admin once the database is open, before serving."""
    admin = settings.admin
    if admin is None:
        return

    async def ensure_admin(app: App) -> None:
        await service.ensure_admin(admin.email, admin.password.get_secret_value())

    # Below the ORM's own start-up listener (priority 0), which opens the connections.
    app.register_listener(ensure_admin, "before_server_start", priority=-10)
