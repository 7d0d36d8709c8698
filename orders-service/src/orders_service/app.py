"""orders-service application factory: every dependency is a parameter, so tests pass fakes."""

from __future__ import annotations

from api_shared.auth import JwksKeySource, TokenVerifier, install_authentication
from api_shared.background import install_periodic
from api_shared.database import install_database
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.settings import TokenSettings
from api_shared.types import App
from orders_service.clients import BooksGraphqlCatalog, HttpSession, UsersServiceDirectory
from orders_service.database import database_config
from orders_service.idempotency import Clock, Idempotency
from orders_service.repository import IdempotencyRepository, OrderRepository
from orders_service.routes import orders
from orders_service.services import OrderService, utc_now
from orders_service.settings import Settings
from orders_service.upstreams import BookCatalog, UserDirectory


def create_app(
    settings: Settings | None = None,
    *,
    verifier: TokenVerifier | None = None,
    catalog: BookCatalog | None = None,
    users: UserDirectory | None = None,
    clock: Clock = utc_now,
) -> App:
    """The orders app; whatever is not passed in is built from ``settings`` (the environment)."""
    settings = settings or Settings()
    app = create_service_app("orders-service", settings)
    install_json_media_rules(app)
    install_database(app, database_config(settings))
    install_authentication(app, verifier or _jwks_verifier(app))
    if catalog is None or users is None:
        http = _install_http_session(app, settings)
        catalog = catalog or BooksGraphqlCatalog(http, settings.books_graphql_url)
        users = users or UsersServiceDirectory(http, settings.users_service_urls)
    service = OrderService(
        OrderRepository(), Idempotency(IdempotencyRepository(), clock), catalog, users, clock
    )
    app.ctx.order_service = service
    _install_idempotency_purge(app, service, settings.idempotency_purge_interval_s)
    app.blueprint(orders)
    return app


def _jwks_verifier(app: App) -> TokenVerifier:
    """Trust users-service's published keys; fetch them once at start (non-fatal if down)."""
    token_settings = TokenSettings()
    keys = JwksKeySource(token_settings.jwks_url)

    async def fetch_keys(app: App) -> None:
        # In the background: users-service may start after us; unknown kids refetch later.
        app.add_task(keys.refresh(), name="fetch_jwks")

    app.register_listener(fetch_keys, "after_server_start")
    return TokenVerifier(
        keys, issuer=token_settings.jwt_issuer, audience=token_settings.jwt_audience
    )


def _install_http_session(app: App, settings: Settings) -> HttpSession:
    http = HttpSession(timeout_s=settings.upstream_timeout_s)

    async def open_session(app: App) -> None:
        await http.open()

    async def close_session(app: App) -> None:
        await http.close()

    app.register_listener(open_session, "before_server_start")
    app.register_listener(close_session, "after_server_stop")
    return http


def _install_idempotency_purge(app: App, service: OrderService, interval_s: float) -> None:
    """Delete expired idempotency records now and then (every replica may: it is idempotent)."""
    app.ctx.idempotency_purge = install_periodic(
        app, "purge_idempotency_records", service.purge_expired_idempotency_records, interval_s
    )
