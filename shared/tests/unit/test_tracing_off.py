"""Tracing off costs nothing: no SDK loaded, no middleware, no listener on any app."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from sanic import Sanic

from api_shared import tracing
from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_shared.tracing import TracingSettings, configure_tracing
from api_shared.types import App

OTEL_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def _handlers_from(app: App, module: str) -> list[str]:
    """The middleware and listeners of ``app`` defined in ``module``."""
    middleware = [*app.request_middleware, *app.response_middleware]
    functions: list[Callable[..., object]] = [m.func for m in middleware]
    functions += [listener for group in app.listeners.values() for listener in group]
    return [f.__qualname__ for f in functions if f.__module__ == module]


@pytest.mark.parametrize("endpoint", [None, ""], ids=["unset", "empty (compose's default)"])
@pytest.mark.parametrize("edge", [False, True], ids=["service", "gateway"])
def test_with_no_otlp_endpoint_an_app_has_no_tracing_middleware(
    monkeypatch: pytest.MonkeyPatch, endpoint: str | None, edge: bool
) -> None:
    for name in OTEL_ENDPOINTS:
        monkeypatch.delenv(name, raising=False)
    if endpoint is not None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    Sanic.test_mode = True

    enabled = configure_tracing("untraced", TracingSettings())
    app = create_service_app("untraced", ServiceSettings(environment="development"), edge=edge)

    assert enabled is False
    assert tracing.tracing_enabled() is False
    assert _handlers_from(app, "api_shared.tracing") == []
    # The check itself sees the frame's other middleware, so it would see tracing's.
    assert _handlers_from(app, "api_shared.service_app")


def test_a_process_without_an_endpoint_never_imports_the_sdk_or_instrumentations() -> None:
    program = (
        "import sys\n"
        "from sanic import Sanic\n"
        "from api_shared.service_app import create_service_app\n"
        "from api_shared.settings import ServiceSettings\n"
        "from api_shared.tracing import configure_tracing\n"
        "Sanic.test_mode = True\n"
        "configure_tracing('untraced')\n"
        "create_service_app('untraced', ServiceSettings(environment='development'))\n"
        "loaded = [m for m in sys.modules if m.startswith(('opentelemetry.sdk',\n"
        "          'opentelemetry.instrumentation', 'opentelemetry.exporter'))]\n"
        "print(','.join(sorted(loaded)))\n"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}

    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
