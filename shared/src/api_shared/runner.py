"""The command line every service shares: ``python -m <service> [serve|migrate|makemigrations]``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from api_shared.database import migrate
from api_shared.lingering import LingeringHttpProtocol
from api_shared.logging import configure_logging
from api_shared.settings import ConfigurationError, ServiceSettings
from api_shared.tracing import configure_tracing
from api_shared.types import App

logger = logging.getLogger(__name__)


def run_service(
    service: str,
    load_settings: Callable[[], ServiceSettings],
    create_app: Callable[[Any], App],
    database_config: Callable[[Any], dict[str, Any]] | None = None,
    argv: Sequence[str] | None = None,
    extra_commands: Mapping[str, str] | None = None,
) -> None:
    """Serve the app, apply its migrations, or write a new migration from model changes.

    ``extra_commands`` (name → one line of help) are the service's own commands, which its
    ``__main__`` runs before calling this: they are listed by ``--help`` with the others.
    """
    own = {
        "serve": "serve the API (the default)",
        "migrate": "apply the database migrations",
        "makemigrations": "write a migration from model changes (--name NAME)",
    }
    if database_config is None:
        own = {"serve": own["serve"]}
    described = {**own, **(extra_commands or {})}
    width = max(len(name) for name in described) + 2
    parser = argparse.ArgumentParser(
        prog=service,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n"
        + "\n".join(f"  {name:<{width}}{text}" for name, text in described.items()),
    )
    parser.add_argument("command", nargs="?", default="serve", choices=list(described))
    args, rest = parser.parse_known_args(argv)
    if args.command not in own:
        parser.error(f"{args.command} is run by the service's own entry point")
    # As PID 1 in a container (no --init) a signal without a handler is ignored: SIGTERM
    # would never stop `migrate`. Sanic installs its own handlers when it serves.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)

    try:
        settings = load_settings()
        configure_logging(service, settings.log_level)
        if database_config is not None and args.command == "migrate":
            asyncio.run(migrate(database_config(settings)))
        elif database_config is not None and args.command == "makemigrations":
            raise SystemExit(asyncio.run(_makemigrations(database_config(settings), rest)))
        else:
            configure_tracing(service)  # before the app: its clients are instrumented
            serve(create_app(settings), settings)
    except (ConfigurationError, ValidationError) as error:
        # A clear sentence, not a traceback: the operator has a setting to fix.
        print(f"{service}: refusing to start: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def serve(app: App, settings: ServiceSettings) -> None:
    # Sanic runs on uvloop when it is installed (a dependency of api-shared); the start line
    # names the loop, so that a process on asyncio's slower one is seen (tests/e2e too).
    app.register_listener(_log_event_loop, "after_server_start")
    # One process per service: Sanic's worker manager would double every process's memory.
    app.run(
        host=settings.host,
        port=settings.port,
        single_process=True,
        access_log=False,
        motd=False,
        protocol=LingeringHttpProtocol,
    )


async def _log_event_loop(app: App) -> None:
    # A listener takes the app alone: Sanic warns of one that takes the loop too.
    kind = type(asyncio.get_running_loop())
    logger.info("serving", extra={"eventLoop": f"{kind.__module__}.{kind.__qualname__}"})


async def _makemigrations(config: dict[str, Any], extra_args: list[str]) -> int:
    """Tortoise's ``makemigrations`` with this service's config (``--name x`` passes through)."""
    from tortoise.cli.cli import run_cli_async

    with tempfile.NamedTemporaryFile("w", suffix=".json") as config_file:
        json.dump(config, config_file)
        config_file.flush()
        return await run_cli_async(
            ["--config-file", config_file.name, "makemigrations", *extra_args]
        )
