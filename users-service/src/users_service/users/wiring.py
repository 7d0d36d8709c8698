"""The users' part of the service's wiring: their store (with the events it records), the
user and login rules, the relay of those events, and the configured admin."""

from __future__ import annotations

from dataclasses import dataclass

from api_shared.context import Resource
from api_shared.database import SchemaCheck
from api_shared.events.outbox import Outbox
from api_shared.events.runtime import Events, events_of
from api_shared.events.streams import USERS
from users_service.budgets import Throttle
from users_service.database import MIGRATIONS
from users_service.passwords import Passwords
from users_service.sessions import SessionService
from users_service.settings import Settings
from users_service.users.admin_bootstrap import AdminBootstrap
from users_service.users.events import CATALOG, UserEvents
from users_service.users.login import AuthService
from users_service.users.ports import AccountMessages
from users_service.users.repository import UserRepository
from users_service.users.services import UserService


@dataclass(frozen=True, slots=True)
class UsersPart:
    users: UserService
    auth: AuthService
    events: Events | None  # the outbox relay to the USERS stream; None with EVENTS_ENABLED=false
    admin: AdminBootstrap | None  # the configured admin, ensured at start-up

    @property
    def resources(self) -> tuple[Resource, ...]:
        return tuple(part for part in (self.events, self.admin) if part is not None)


def user_store(settings: Settings) -> UserRepository:
    """The users' store, recording their events in each change's transaction."""
    return UserRepository(UserEvents(Outbox(CATALOG, enabled=settings.events_enabled)))


def wire_users(
    settings: Settings,
    store: UserRepository,
    passwords: Passwords,
    sessions: SessionService,
    throttle: Throttle,
    *,
    mail: AccountMessages,
) -> UsersPart:
    users = UserService(store, passwords, sessions, throttle, mail=mail)
    admin = settings.admin
    return UsersPart(
        users=users,
        auth=AuthService(store, passwords, sessions, throttle),
        events=events_of(settings, USERS, name="users-service"),
        admin=AdminBootstrap(users, admin, SchemaCheck(MIGRATIONS)) if admin else None,
    )
