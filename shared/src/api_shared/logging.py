"""JSON log lines: one object per line, and one access line per request (docs/api.md#operations).

Every line written while a request is handled carries its ``requestId``, and its
``traceId`` and ``spanId`` when tracing is on. The access line adds the client's address,
the caller's ``subject`` (the user id of a verified token; never an email), the response's
size, and at the gateway the ``upstream`` and how long it took.

A streamed response's access line is written when the stream ends (``defer_access_line``),
with its whole duration.

The access line is written once per request, so it takes a short way: its dict is built
directly and written to stdout as bytes, without a LogRecord, a Formatter or a lock. That
way is taken only while stdout is the one destination (``configure_logging``'s); anything
else listening (a test's capture, an added handler) gets the same fields as a record.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

import orjson
from sanic import Request
from sanic.response import BaseHTTPResponse

from api_shared.request_id import current_request_id, request_id_of
from api_shared.tracing import current_trace_ids

# Attributes every LogRecord has; anything else was passed through ``extra=`` and is logged.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
}


class _Clock:
    """ISO 8601 UTC times to the millisecond; the text of the current second is reused."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def format(self, timestamp: float) -> str:
        second = int(timestamp)
        if second != self._second:
            moment = datetime.fromtimestamp(second, UTC)
            self._prefix, self._second = moment.strftime("%Y-%m-%dT%H:%M:%S"), second
        # Truncated, as datetime.isoformat(timespec="milliseconds") does.
        return f"{self._prefix}.{int((timestamp - second) * 1000):03d}+00:00"


_clock = _Clock()


def context_fields(line: dict[str, Any]) -> dict[str, Any]:
    """``line`` with the request and trace ids of the request being handled, if any."""
    request_id = current_request_id.get()
    if request_id is not None:
        line["requestId"] = request_id
    trace_ids = current_trace_ids()
    if trace_ids is not None:
        line["traceId"], line["spanId"] = trace_ids
    return line


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object naming the service."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line = context_fields(
            {
                "time": _clock.format(record.created),
                "level": record.levelname.lower(),
                "service": self.service,
                "logger": record.name,
                "message": record.getMessage(),
            }
        )
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and value is not None:
                line[key] = value
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class LineWriter:
    """Writes whole lines of bytes straight to a file descriptor (stdout), one write each.

    No buffer to lose at exit and no thread to share the interpreter with: a line is in
    the file (or the pipe) when ``write`` returns, which costs one system call.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a pipe may take less than a large line at once
            view = view[os.write(self.fd, view) :]


class JsonHandler(logging.Handler):
    """Every other record, formatted by ``JsonFormatter``, through the same ``LineWriter``."""

    def __init__(self, writer: LineWriter, service: str) -> None:
        super().__init__()
        self.writer = writer
        self.setFormatter(JsonFormatter(service))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.writer.write(self.format(record).encode() + b"\n")
        except Exception:  # logging must never break the request
            self.handleError(record)


class _Output:
    """Where ``configure_logging`` sends lines; the access line's short way needs it."""

    def __init__(self) -> None:
        self.service = ""
        self.writer: LineWriter | None = None
        self.handlers: list[logging.Handler] = []


_output = _Output()


def configure_logging(service: str, level: str = "INFO", fd: int | None = None) -> None:
    """Send every logger's records to stdout (or the file descriptor ``fd``) as JSON lines."""
    sys.stdout.flush()  # anything printed before goes out before the first line
    writer = LineWriter(sys.stdout.fileno() if fd is None else fd)
    handler = JsonHandler(writer, service)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    _output.service, _output.writer, _output.handlers = service, writer, [handler]
    for name in ("sanic.root", "sanic.error", "sanic.access", "sanic.server", "tortoise"):
        # Sanic installs its own handlers; route everything through the JSON one instead.
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("sanic.access").disabled = True  # replaced by the access line below
    # Python's warnings (a library's DeprecationWarning) as log lines too, not bare stderr
    # text between the JSON lines.
    logging.captureWarnings(True)


# At DEBUG these log every query with its parameters (password hashes, personal data).
QUERY_LOGGERS = ("tortoise.db_client", "aiosqlite", "asyncpg")


def quiet_query_loggers() -> None:
    """Keep query logging at INFO whatever LOG_LEVEL says."""
    for name in QUERY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.getLogger(name).level, logging.INFO))


access_logger = logging.getLogger(f"{__name__}.access")  # the per-request lines
ACCESS_MESSAGE = "request"


def log_access_line(fields: dict[str, Any]) -> None:
    """One access line of ``fields`` (None values left out), if the access logger is on."""
    if not access_logger.isEnabledFor(logging.INFO):
        return
    writer = _output.writer
    if writer is None or logging.root.handlers != _output.handlers or access_logger.handlers:
        access_logger.info(ACCESS_MESSAGE, extra=fields)
        return
    line = context_fields(
        {
            "time": _clock.format(time.time()),
            "level": "info",
            "service": _output.service,
            "logger": access_logger.name,
            "message": ACCESS_MESSAGE,
        }
    )
    for key, value in fields.items():
        if value is not None:
            line[key] = value
    try:
        writer.write(orjson.dumps(line, default=str, option=orjson.OPT_APPEND_NEWLINE))
    except OSError:  # stdout closed or broken: the long way reports it, as logging does
        access_logger.info(ACCESS_MESSAGE, extra=fields)


def start_clock(request: Request) -> None:
    """Note when the request began (its access line's and its metrics' duration)."""
    request.ctx.started_at = time.perf_counter()


def defer_access_line(request: Request) -> None:
    """Leave ``request``'s access line to ``log_deferred_access``: a streamed response's
    head goes out (and the response pass runs) long before it ends, and its line is written
    once it has, with the whole duration."""
    request.ctx.access_deferred = True


def log_deferred_access(request: Request, response: BaseHTTPResponse, **fields: Any) -> None:
    """The access line ``defer_access_line`` held back, now; ``fields`` add to or replace its
    own (the bytes a stream sent, why it ended)."""
    request.ctx.access_deferred = False
    log_access(request, response, **fields)


def log_access(request: Request, response: BaseHTTPResponse, **extra: Any) -> None:
    """Log one line per request: request id, method, path, status, duration; never a body.

    Also who asked (client address, token subject) and, at the gateway, which upstream
    answered and how long it took (``request.ctx.upstream``, ``upstream_duration_s``).
    """
    if not access_logger.isEnabledFor(logging.INFO):
        return  # LOG_LEVEL above INFO: the line's fields would be built for nothing
    if getattr(request.ctx, "access_deferred", False):
        return  # a stream's, written when it ends
    started = getattr(request.ctx, "started_at", None)
    duration_ms = (time.perf_counter() - started) * 1000 if started is not None else None
    upstream_s: float | None = getattr(request.ctx, "upstream_duration_s", None)
    principal = getattr(request.ctx, "principal", None)
    log_access_line(
        {
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
            **extra,
        }
    )


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
