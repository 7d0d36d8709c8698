"""The service app: the frame every service is built in (errors, request ids, logs, metrics,
traces, health), made by ``create_service_app``."""

from __future__ import annotations

from collections.abc import Sequence

from sanic import Request, Sanic
from sanic.response import BaseHTTPResponse
from sanic_ext.extensions.health.extension import HealthExtension
from sanic_ext.extensions.http.extension import HTTPExtension
from sanic_ext.extensions.logging.extension import LoggingExtension
from sanic_ext.extensions.openapi.extension import OpenAPIExtension

from api_shared.error_handler import ContractRequest, install_error_handler
from api_shared.frame import Frame, install_frame
from api_shared.health import install_health
from api_shared.logging import log_access, quiet_query_loggers, start_clock
from api_shared.metrics import install_metrics, new_registry
from api_shared.representation import dumps
from api_shared.request_id import assign_request_id, echo_request_id
from api_shared.settings import ServiceSettings
from api_shared.shutdown import install_prompt_shutdown
from api_shared.tracing import install_tracing
from api_shared.types import App
from api_shared.version import install_version


def create_service_app(
    name: str,
    settings: ServiceSettings,
    *,
    edge: bool = False,
    metric_labels: Sequence[str] = (),
    distribution: str | None = None,
) -> App:
    """A Sanic app with the platform's contract installed; the service adds its routes.

    The frame's own parts are on its ``Frame`` (``api_shared.frame.frame_of``).

    ``edge``: the public entry point (the gateway), where traces start. ``metric_labels``:
    labels of the request metrics beyond route, method and status, read from ``request.ctx``.
    ``distribution``: the workspace member whose version the process has (``GET /version``,
    the OpenAPI ``info``), when it is not ``name`` (the webhooks dispatcher's).
    """
    distribution = distribution or name
    # configure_logging=False: api_shared.logging owns the handlers (JSON lines on stdout).
    quiet_query_loggers()
    app = Sanic(name, dumps=dumps, configure_logging=False, request_class=ContractRequest)
    app.config.REQUEST_MAX_SIZE = settings.max_body_bytes
    app.config.ACCESS_LOG = False  # the JSON access line replaces Sanic's
    app.config.MOTD = False
    app.config.KEEP_ALIVE_TIMEOUT = 75  # outlive the gateway's pooled connections
    app.config.REQUEST_ID_HEADER = "X-Request-ID"
    frame = Frame(settings, metrics=new_registry())
    install_frame(app, frame)
    _install_extensions(app, edge=edge)
    install_error_handler(app)
    install_tracing(app, edge=edge)
    observe = install_metrics(app, frame.metrics, metric_labels)
    install_health(app, frame)
    install_version(app, distribution)
    close_when_stopping = install_prompt_shutdown(app, frame)

    # The frame's steps in one request pass and one response pass: each middleware costs
    # a call through Sanic's machinery on every request. Plain functions: no coroutine.
    def begin(request: Request) -> None:
        assign_request_id(request)
        start_clock(request)

    def finish(request: Request, response: BaseHTTPResponse) -> None:
        close_when_stopping(request, response)
        observe(request, response)
        log_access(request, response)
        echo_request_id(request, response)  # last: it leaves the context without an id

    # Request middleware run from the highest priority, response middleware from the
    # lowest: the frame is around the app's own (and inside the trace's span, 1001).
    app.register_middleware(begin, "request", priority=1000)
    app.register_middleware(finish, "response", priority=1000)
    return app


def _install_extensions(app: App, *, edge: bool) -> None:
    """sanic-ext's built-in extensions but its dependency injection; none at the edge.

    No service injects dependencies (each reads its context from the app), and the injection
    extension's signal runs on every request (~10 µs). The gateway serves the merged OpenAPI
    document and answers CORS itself, so it needs none of them.
    """
    if edge:
        app.config.AUTO_EXTEND = False
        return
    app.extend(
        extensions=[OpenAPIExtension, HTTPExtension, HealthExtension, LoggingExtension],
        built_in_extensions=False,
    )
