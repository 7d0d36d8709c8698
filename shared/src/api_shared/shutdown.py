"""A prompt graceful shutdown: the requests in progress finish, then their connections close.

On SIGTERM Sanic stops accepting connections but serves those already open until each is
idle, or until ``GRACEFUL_SHUTDOWN_TIMEOUT`` (15 s) has passed. A client that pools
keep-alive connections (the gateway, a load balancer) keeps them busy, so a service under
steady traffic took the whole timeout to stop, or was killed. Once the server is stopping,
every response says ``Connection: close``: the client opens its next connection to another
replica (or is refused, and answers 503), and the process exits as soon as the requests in
progress have been answered.

The grace is bounded by ``SHUTDOWN_GRACE_S``: longer than any request may take (the gateway
gives up on an upstream after ``UPSTREAM_TIMEOUT_S``, 10 s by default), shorter than what
Kubernetes allows after the ``preStop`` drain (``terminationGracePeriodSeconds``, 30 s).
"""

from __future__ import annotations

from collections.abc import Callable

from sanic import Request
from sanic.http import Http
from sanic.response import BaseHTTPResponse

from api_shared.frame import Frame
from api_shared.types import App

SHUTDOWN_GRACE_S = 15.0


def install_prompt_shutdown(app: App, frame: Frame) -> Callable[[Request, BaseHTTPResponse], None]:
    """Answer the requests in progress on SIGTERM, close idle connections at once.

    Marks ``frame`` stopping; returns the step of the frame's response pass
    (api_shared.service_app) that says ``Connection: close`` once stopping.
    """
    app.config.GRACEFUL_SHUTDOWN_TIMEOUT = SHUTDOWN_GRACE_S

    async def mark_stopping(app: App) -> None:
        frame.stopping = True

    def close_when_stopping(request: Request, response: BaseHTTPResponse) -> None:
        if frame.stopping and isinstance(request.stream, Http):
            request.stream.keep_alive = False

    app.register_listener(mark_stopping, "before_server_stop")
    return close_when_stopping
