"""A service's version comes from its distribution's metadata (docs/releasing.md)."""

from __future__ import annotations

import tomllib
import uuid
from pathlib import Path

from sanic import Sanic

from api_shared.version import install_version, service_version, version_body

ROOT = Path(__file__).resolve().parents[3]


def _pyproject_version(member: str) -> str:
    text = (ROOT / member / "pyproject.toml").read_text(encoding="utf-8")
    version: str = tomllib.loads(text)["project"]["version"]
    return version


def test_the_version_is_the_one_of_the_services_pyproject() -> None:
    assert service_version("orders-service") == _pyproject_version("orders-service")
    assert version_body("books-graphql") == {
        "service": "books-graphql",
        "version": _pyproject_version("books-graphql"),
    }


def test_a_service_gets_get_version_and_its_openapi_info() -> None:
    app = Sanic(f"version-{uuid.uuid4().hex}")

    install_version(app, "webhooks-service")

    assert [route.path for route in app.router.routes] == ["version"]
    info = (app.config.API_TITLE, app.config.API_VERSION)  # sanic-ext's OpenAPI info
    assert info == ("webhooks-service", _pyproject_version("webhooks-service"))


def test_an_app_of_no_installed_distribution_gets_no_version() -> None:
    app = Sanic(f"version-{uuid.uuid4().hex}")

    install_version(app, "no-such-service")

    assert list(app.router.routes) == []
    assert "API_VERSION" not in app.config
