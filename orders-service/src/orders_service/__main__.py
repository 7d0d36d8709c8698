"""``python -m orders_service [serve|migrate|makemigrations]``."""

from __future__ import annotations

from api_shared.runner import run_service
from orders_service.app import create_app
from orders_service.database import database_config
from orders_service.settings import Settings


def main() -> None:
    run_service("orders-service", Settings, create_app, database_config)


if __name__ == "__main__":
    main()
