"""A service's version (docs/releasing.md) and ``GET /version``, which tells it.

The one source of truth is the ``version`` of the service's ``pyproject.toml``; it is read
here from the installed distribution's metadata, so the running code, its documents
(OpenAPI ``info.version``, AsyncAPI, GraphQL) and its image label never disagree with it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version

from sanic import Request
from sanic.response import HTTPResponse

from api_shared.representation import json_response
from api_shared.types import App


def service_version(distribution: str) -> str:
    """The version of ``distribution`` (a workspace member's name, e.g. ``users-service``)."""
    return distribution_version(distribution)


def version_body(service: str) -> dict[str, str]:
    """What ``GET /version`` answers: the service's name and its version."""
    return {"service": service, "version": service_version(service)}


def install_version(app: App, service: str) -> None:
    """Add ``GET /version``, answering ``{"service": ..., "version": ...}`` of ``service``, and
    name both in the app's OpenAPI ``info`` (sanic-ext's ``API_TITLE``, ``API_VERSION``).

    An app named after no installed distribution (a test's own) has no version: it gets none.
    """
    try:
        body = version_body(service)
    except PackageNotFoundError:
        return
    app.config.API_TITLE = service
    app.config.API_VERSION = body["version"]

    @app.get("/version", name="version")
    async def get_version(request: Request) -> HTTPResponse:
        return json_response(body)
