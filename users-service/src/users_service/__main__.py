"""``python -m users_service [serve|migrate|makemigrations|seed --users N]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from api_shared.runner import run_service
from users_service.app import create_app
from users_service.cli import seed_command
from users_service.database import database_config
from users_service.settings import Settings


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["seed"]:
        raise SystemExit(seed_command(args[1:]))
    run_service("users-service", Settings, create_app, database_config, args)


if __name__ == "__main__":
    main()
