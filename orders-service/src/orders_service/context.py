"""orders-service's context: the parts its handlers work with, built once by ``wire``."""

from __future__ import annotations

from dataclasses import dataclass

from sanic import Request

from api_shared.auth.verifier import TokenVerifier
from api_shared.background import Periodic
from api_shared.context import Resource
from api_shared.events.outbox import Outbox
from api_shared.events.runtime import Events, events_of
from api_shared.events.streams import ORDERS, USERS
from api_shared.http import HttpSession
from api_shared.standing import CallerConfirmation
from api_shared.trust import TrustsUsersService, trust_users_service
from orders_service.clients import BooksGraphqlCatalog, UsersServiceDirectory
from orders_service.events import (
    CATALOG,
    USER_DELETED_SUBJECT,
    USER_DELETIONS_CONSUMER,
    OutboxEventLog,
    user_deleted_handler,
)
from orders_service.idempotency import Clock
from orders_service.ports import BookCatalog, UserDirectory
from orders_service.repository import IdempotencyRepository, OrderRepository, TortoiseUnitOfWork
from orders_service.services import OrderService, utc_now
from orders_service.settings import Settings


@dataclass(frozen=True, slots=True)
class Context(TrustsUsersService):
    settings: Settings
    verifier: TokenVerifier  # users-service's published keys, unless a test passes its own
    standing: CallerConfirmation  # users-service's word on admins and writers
    orders: OrderService
    events: Events | None  # None with EVENTS_ENABLED=false
    resources: tuple[Resource, ...]  # started and stopped by install_context


def wire(
    settings: Settings,
    *,
    verifier: TokenVerifier | None = None,
    catalog: BookCatalog | None = None,
    users: UserDirectory | None = None,
    standing: CallerConfirmation | None = None,
    clock: Clock = utc_now,
) -> Context:
    """Build every part from ``settings``; a keyword replaces that part (tests pass fakes)."""
    http = HttpSession(timeout_s=settings.upstream_timeout_s)  # one per process
    calls = catalog is None or users is None  # what is built for them calls through http
    trust = trust_users_service(
        settings, http, verifier=verifier, standing=standing, http_used=calls
    )
    orders = OrderService(
        OrderRepository(),
        IdempotencyRepository(),
        TortoiseUnitOfWork(),
        OutboxEventLog(Outbox(CATALOG, enabled=settings.events_enabled)),
        catalog or BooksGraphqlCatalog(http, settings.books_graphql_url),
        users or UsersServiceDirectory(trust.replicas),
        clock,
    )
    events = _events(settings, orders)
    # Every replica may purge expired idempotency records: deleting them is idempotent.
    purge = Periodic(
        "purge_idempotency_records",
        orders.purge_expired_idempotency_records,
        settings.idempotency_purge_interval_s,
    )
    resources = (*trust.resources, *([events] if events is not None else []), purge)
    return Context(settings, trust.verifier, trust.standing, orders, events, resources)


def _events(settings: Settings, orders: OrderService) -> Events | None:
    """The outbox relay (stream ORDERS) and the consumer of deleted users' events; None with
    EVENTS_ENABLED=false."""
    events = events_of(settings, ORDERS, name="orders-service")
    if events is not None:
        events.consume(
            USERS,
            durable=USER_DELETIONS_CONSUMER,
            subject=USER_DELETED_SUBJECT,
            handler=user_deleted_handler(orders.forget_user),
        )
    return events


def context_of(request: Request) -> Context:
    """The typed context of the app serving ``request``."""
    context: Context = request.app.ctx.context
    return context
