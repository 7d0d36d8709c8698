"""The configured admin (ADMIN_EMAIL, ADMIN_PASSWORD_FILE), ensured once the database is open."""

from __future__ import annotations

import logging

from api_shared.background import BackgroundTask
from api_shared.database import SchemaCheck
from users_service.settings import AdminCredentials
from users_service.users.services import AdminEmailTakenError, UserService

logger = logging.getLogger(__name__)


class AdminBootstrap:
    """Ensures the configured admin when the server starts, before it serves (a resource,
    listed last: the database is open and the password slots are there).

    When ADMIN_EMAIL belongs to an account that is not an admin, whoever registered it
    first is neither promoted nor has their password reset, and the service starts without
    the configured admin, saying so at ERROR level: refusing to start would let anyone who
    signs up first keep the whole service down (production included).
    """

    def __init__(self, users: UserService, admin: AdminCredentials, schema: SchemaCheck) -> None:
        self.users = users
        self.admin = admin
        self.schema = schema  # its own check of the service's migrations
        self._waiting = BackgroundTask("ensure_admin", self._ensure_when_migrated)

    async def start(self) -> None:
        try:
            await self.schema()
        except LookupError:
            # A new version starting while its migration Job runs: the admin's row has the
            # old columns until then. /ready says 503 meanwhile; ensure it once migrated.
            logger.warning("schema behind its migrations: the admin is ensured once they ran")
            await self._waiting.start()
            return
        await self._ensure()

    async def stop(self) -> None:
        await self._waiting.stop()

    async def _ensure_when_migrated(self) -> None:
        await self.schema.wait()
        await self._ensure()

    async def _ensure(self) -> None:
        admin = self.admin
        try:
            await self.users.ensure_admin(admin.email, admin.password.get_secret_value())
        except AdminEmailTakenError:
            logger.error(
                "ADMIN_EMAIL belongs to an existing account that is not an admin: it is "
                "neither promoted nor has its password reset, and the service runs without "
                "the configured admin. Set another ADMIN_EMAIL, or make that account an "
                "admin through the API if it is really yours.",
                extra={"event": "admin_email_taken", "email": admin.email},
            )
