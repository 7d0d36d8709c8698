"""``GET /health`` (the process is alive) and ``GET /ready`` (its dependencies answer).

``/ready`` runs the frame's readiness checks (``Frame.add_readiness_check``; a context's
resources bring theirs, api_shared.context). It also answers 503 once the server is stopping
(``Frame.stopping``, set by ``api_shared.shutdown``), so that a probe sees a draining process
leave before it is gone.
"""

from __future__ import annotations

import asyncio
import logging

from sanic import Request
from sanic.response import HTTPResponse

from api_shared.frame import Frame, ReadinessCheck
from api_shared.representation import json_response
from api_shared.types import App

logger = logging.getLogger(__name__)
CHECK_TIMEOUT_S = 2.0


async def _run_check(name: str, check: ReadinessCheck) -> tuple[str, bool]:
    try:
        await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
    except Exception as error:
        logger.warning("readiness check failed", extra={"check": name, "error": repr(error)})
        return name, False
    return name, True


def install_health(app: App, frame: Frame) -> None:
    """Add the health and readiness routes; ``/ready`` runs ``frame``'s checks."""

    @app.get("/health", name="health")
    async def get_health(request: Request) -> HTTPResponse:
        return json_response({"status": "ok"})

    @app.get("/ready", name="ready")
    async def get_ready(request: Request) -> HTTPResponse:
        checks = frame.readiness
        results = dict(await asyncio.gather(*(_run_check(n, c) for n, c in checks.items())))
        stopping = frame.stopping
        ready = all(results.values()) and not stopping
        body = {
            "status": "ok" if ready else "stopping" if stopping else "unavailable",
            "checks": {name: "ok" if ok else "unavailable" for name, ok in results.items()},
        }
        return json_response(body, status=200 if ready else 503)
