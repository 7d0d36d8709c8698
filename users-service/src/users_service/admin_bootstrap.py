"""The configured admin (ADMIN_EMAIL, ADMIN_PASSWORD_FILE), ensured once the database is open."""

from __future__ import annotations

import logging

from api_shared.database import SchemaCheck
from api_shared.types import App
from users_service.context import Context
from users_service.services import AdminEmailTakenError

logger = logging.getLogger(__name__)


def install_admin_bootstrap(app: App, context: Context) -> None:
    """Ensure the configured admin once the database is open, before serving.

    When ADMIN_EMAIL belongs to an account that is not an admin, whoever registered it
    first is neither promoted nor has their password reset, and the service starts without
    the configured admin, saying so at ERROR level: refusing to start would let anyone who
    signs up first keep the whole service down (production included).
    """
    admin = context.settings.admin
    if admin is None:
        return
    service = context.users

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
        await ensure()

    async def ensure_when_migrated(schema: SchemaCheck) -> None:
        await schema.wait()
        await ensure()

    async def ensure() -> None:
        try:
            await service.ensure_admin(admin.email, admin.password.get_secret_value())
        except AdminEmailTakenError:
            logger.error(
                "ADMIN_EMAIL belongs to an existing account that is not an admin: it is "
                "neither promoted nor has its password reset, and the service runs without "
                "the configured admin. Set another ADMIN_EMAIL, or make that account an "
                "admin through the API if it is really yours.",
                extra={"event": "admin_email_taken", "email": admin.email},
            )

    # Below the ORM's own start-up listener (priority 0), which opens the connections, and
    # below the context's resources (api_shared.context.PRIORITY), which start before it.
    app.register_listener(ensure_admin, "before_server_start", priority=-10)
