"""``python -m users_service seed --users N``: create N users quickly, with a progress bar."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence

from tortoise import Tortoise
from tortoise.exceptions import BaseORMException
from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type information

from api_shared.commands import add_batch_options
from api_shared.logging import configure_logging
from users_service.database import database_config
from users_service.settings import Settings
from users_service.users.seeding import DEFAULT_BATCH_SIZE, seed_users


def seed_command(argv: Sequence[str], settings: Settings | None = None) -> int:
    """Seed users into USERS_DATABASE_URL; the exit status is 0 on success."""
    parser = argparse.ArgumentParser(
        prog="python -m users_service seed",
        description=(
            "Add N customers without a password (USERS_DATABASE_URL, migrated first): "
            "COPY on PostgreSQL, batched inserts on SQLite, the role counts kept exact."
        ),
    )
    parser.add_argument("--users", type=int, required=True, metavar="N")
    add_batch_options(parser, default_batch_size=DEFAULT_BATCH_SIZE)
    args = parser.parse_args(argv)
    if args.users < 1 or args.batch_size < 1:
        parser.error("--users and --batch-size must be at least 1")
    settings = settings or Settings()
    configure_logging("users-service", settings.log_level)
    started = time.monotonic()
    try:
        asyncio.run(_seed(settings, args.users, args.batch_size, args.progress))
    except BaseORMException as error:
        print(
            f"error: the users database refused the seeding ({error}); "
            "is it reachable and migrated (python -m users_service migrate)?",
            file=sys.stderr,
        )
        return 1
    print(f"{args.users} users added in {time.monotonic() - started:.1f} s.")
    return 0


async def _seed(settings: Settings, users: int, batch_size: int, progress: bool | None) -> None:
    await Tortoise.init(config=database_config(settings))
    try:
        disable = None if progress is None else not progress  # None: only on a terminal
        with tqdm(total=users, unit="user", unit_scale=True, disable=disable) as bar:
            await seed_users(users, batch_size=batch_size, on_batch=bar.update)
    finally:
        await Tortoise.close_connections()
