"""``python -m users_service [serve|migrate]``."""

from __future__ import annotations

from api_shared.runner import run_service
from users_service.app import create_app
from users_service.database import database_config
from users_service.settings import Settings


def main() -> None:
    run_service("users-service", Settings, create_app, database_config)


if __name__ == "__main__":
    main()
