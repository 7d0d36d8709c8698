"""Users: sign-up, reading, changing and deleting them (``/api/users``), password login,
the events their changes record, and the configured admin."""

from users_service.users.events import CATALOG
from users_service.users.login import AuthService
from users_service.users.ports import UserChanges, UserSessions, UserStore
from users_service.users.routes import users
from users_service.users.services import UserService
from users_service.users.wiring import UsersPart, user_store, wire_users

__all__ = [
    "CATALOG",
    "AuthService",
    "UserChanges",
    "UserService",
    "UserSessions",
    "UserStore",
    "UsersPart",
    "user_store",
    "users",
    "wire_users",
]
