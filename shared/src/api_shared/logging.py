"""JSON log lines: one object per line, and one access line per request (docs/api.md#operations).

Every line written while a request is handled carries its ``requestId``, and its
``traceId`` and ``spanId`` when tracing is on. The access line adds the client's address,
the caller's ``subject`` (the user id of a verified token; never an email), the response's
size, and at the gateway the ``upstream`` and how long it took.
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

import orjson
from sanic import Request
from sanic.response import BaseHTTPResponse

from api_shared.request_id import current_request_id, request_id_of
from api_shared.tracing import current_trace_ids
from api_shared.types import App

# Attributes every LogRecord has; anything else was passed through ``extra=`` and is logged.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object naming the service."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id.get()
        if request_id is not None:
            line["requestId"] = request_id
        trace_ids = current_trace_ids()
        if trace_ids is not None:
            line["traceId"], line["spanId"] = trace_ids
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and value is not None:
                line[key] = value
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(service: str, level: str = "INFO") -> None:
    """Send every logger's records to stdout as JSON lines."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("sanic.root", "sanic.error", "sanic.access", "sanic.server", "tortoise"):
        # Sanic installs its own handlers; route everything through the JSON one instead.
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("sanic.access").disabled = True  # replaced by the access line below


# At DEBUG these log every query with its parameters (password hashes, personal data).
QUERY_LOGGERS = ("tortoise.db_client", "aiosqlite", "asyncpg")


def quiet_query_loggers() -> None:
    """Keep query logging at INFO whatever LOG_LEVEL says."""
    for name in QUERY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.getLogger(name).level, logging.INFO))


access_logger = logging.getLogger(f"{__name__}.access")  # the per-request lines


def install_access_log(app: App) -> None:
    """Log one line per request: request id, method, path, status, duration; never a body.

    Also who asked (client address, token subject) and, at the gateway, which upstream
    answered and how long it took (``request.ctx.upstream``, ``upstream_duration_s``).
    """

    async def start_clock(request: Request) -> None:
        request.ctx.started_at = time.perf_counter()

    async def log_access(request: Request, response: BaseHTTPResponse) -> None:
        started = getattr(request.ctx, "started_at", None)
        duration_ms = (time.perf_counter() - started) * 1000 if started is not None else None
        upstream_s: float | None = getattr(request.ctx, "upstream_duration_s", None)
        principal = getattr(request.ctx, "principal", None)
        access_logger.info(
            "request",
            extra={
                "requestId": request_id_of(request),
                "method": request.method,
                # The path only: a query string may carry secrets a client put there.
                "path": request.path,
                "status": response.status,
                "durationMs": round(duration_ms, 3) if duration_ms is not None else None,
                "client": client_address(request),
                "subject": principal.subject if principal is not None else None,
                "upstream": getattr(request.ctx, "upstream", None),
                "upstreamDurationMs": round(upstream_s * 1000, 3) if upstream_s else None,
                "responseBytes": response_size(response),
            },
        )

    app.register_middleware(start_clock, "request", priority=999)
    app.register_middleware(log_access, "response", priority=999)


def client_address(request: Request) -> str | None:
    """The client's address: as the gateway resolved it (trusted proxies), else the peer's."""
    resolved: str | None = getattr(request.ctx, "client_address", None)
    if resolved is not None:
        return resolved
    return request.conn_info.client_ip if request.conn_info is not None else None


def response_size(response: BaseHTTPResponse) -> int | None:
    """The body's size in bytes (None for a streamed body of unknown length)."""
    if response.body is not None:
        return len(response.body)
    length = response.headers.get("content-length")
    return int(length) if length is not None and length.isdigit() else None
