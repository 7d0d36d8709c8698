"""The frame every service app is built in: errors, request ids, logs, metrics, traces, health."""

from __future__ import annotations

from collections.abc import Sequence

from sanic import Sanic

from api_shared.error_handler import ContractRequest, install_error_handler
from api_shared.health import install_health
from api_shared.logging import install_access_log, quiet_query_loggers
from api_shared.metrics import install_metrics
from api_shared.representation import dumps
from api_shared.request_id import install_request_ids
from api_shared.settings import ServiceSettings
from api_shared.shutdown import install_prompt_shutdown
from api_shared.tracing import install_tracing
from api_shared.types import App


def create_service_app(
    name: str,
    settings: ServiceSettings,
    *,
    edge: bool = False,
    metric_labels: Sequence[str] = (),
) -> App:
    """A Sanic app with the platform's contract installed; the service adds its routes.

    ``edge``: the public entry point (the gateway), where traces start. ``metric_labels``:
    labels of the request metrics beyond route, method and status, read from ``request.ctx``.
    """
    # configure_logging=False: api_shared.logging owns the handlers (JSON lines on stdout).
    quiet_query_loggers()
    app = Sanic(name, dumps=dumps, configure_logging=False, request_class=ContractRequest)
    app.config.REQUEST_MAX_SIZE = settings.max_body_bytes
    app.config.ACCESS_LOG = False  # the JSON access line replaces Sanic's
    app.config.MOTD = False
    app.config.KEEP_ALIVE_TIMEOUT = 75  # outlive the gateway's pooled connections
    app.config.REQUEST_ID_HEADER = "X-Request-ID"
    app.ctx.settings = settings
    install_error_handler(app)
    install_request_ids(app)
    install_tracing(app, edge=edge)
    install_access_log(app)
    install_metrics(app, metric_labels)
    install_health(app)
    install_prompt_shutdown(app)
    return app
