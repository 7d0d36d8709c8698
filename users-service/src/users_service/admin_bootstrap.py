"""The configured admin (ADMIN_EMAIL, ADMIN_PASSWORD), ensured once the database is open."""

from __future__ import annotations

import logging

from tortoise import Tortoise

from api_shared.database import SchemaCheck
from api_shared.settings import ConfigurationError
from api_shared.types import App
from users_service.context import Context
from users_service.services import AdminEmailTakenError

logger = logging.getLogger(__name__)


class _StartRefusalFilter(logging.Filter):
    """Sanic logs whatever stops its start-up with a traceback; a refusal is not a bug.

    The runner prints the refusal as one line (as it does for settings) and exits 2.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ConfigurationError))


START_REFUSAL_FILTER = _StartRefusalFilter()


def install_admin_bootstrap(app: App, context: Context) -> None:
    """Ensure the configured admin once the database is open, before serving.

    When ADMIN_EMAIL belongs to an account that is not an admin, whoever registered it
    first is neither promoted nor has their password reset: production refuses to start
    (the operator must choose), development starts without the admin, with a warning.
    """
    settings, service = context.settings, context.users
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
            # The server never starts, so its stop listeners never run: stop what would
            # keep the process alive (the context's threads and jobs, aiosqlite's thread)
            # before refusing.
            for resource in reversed(context.resources):
                await resource.stop()
            await Tortoise.close_connections()
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

    # Below the ORM's own start-up listener (priority 0), which opens the connections, and
    # below the context's resources (api_shared.context.PRIORITY), which start before it.
    app.register_listener(ensure_admin, "before_server_start", priority=-10)
