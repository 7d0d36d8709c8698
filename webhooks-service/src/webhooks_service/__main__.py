"""``python -m webhooks_service [serve|migrate|makemigrations|dispatch]``."""

from __future__ import annotations

import sys

from api_shared.runner import run_service
from webhooks_service.app import create_app
from webhooks_service.database import database_config
from webhooks_service.dispatcher import create_dispatcher_app, dispatcher_settings
from webhooks_service.settings import Settings

DISPATCH = "dispatch"


def main() -> None:
    if sys.argv[1:2] == [DISPATCH]:
        run_service(
            "webhooks-dispatcher",
            dispatcher_settings,
            create_dispatcher_app,
            argv=["serve", *sys.argv[2:]],
        )
        return
    run_service(
        "webhooks-service",
        Settings,
        create_app,
        database_config,
        extra_commands={
            DISPATCH: "deliver events to the endpoints (probes on WEBHOOKS_DISPATCHER_PORT)"
        },
    )


if __name__ == "__main__":
    main()
