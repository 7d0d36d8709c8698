"""``python -m gateway``."""

from __future__ import annotations

from api_shared.runner import run_service
from gateway.app import create_app
from gateway.settings import Settings


def main() -> None:
    run_service("gateway", Settings, create_app)


if __name__ == "__main__":
    main()
