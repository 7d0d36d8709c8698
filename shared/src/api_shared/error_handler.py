"""One error handler that turns every failure of a Sanic app into the contract's body.

Sanic's own errors (404, 405, 413, bad requests), Tortoise's ``DoesNotExist`` and
``IntegrityError``, database outages and anything unexpected all leave as
``{"error": {...}}`` with the right status; a 500 says nothing internal and logs the traceback.
A request whose client went away is no failure: it is logged as cancelled, status 499
(``api_shared.cancelled``).
"""

from __future__ import annotations

import logging
import re
import sqlite3
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from sanic import Request
from sanic.constants import HTTP_METHODS
from sanic.exceptions import BadRequest, MethodNotAllowed, SanicException
from sanic.handlers import ErrorHandler
from sanic.response import HTTPResponse
from tortoise.exceptions import DBConnectionError, DoesNotExist, IntegrityError

from api_shared import errors
from api_shared.cancelled import cancelled_response, is_cancellation
from api_shared.representation import json_response
from api_shared.request_id import REQUEST_ID_HEADER, request_id_of
from api_shared.types import App
from api_shared.validation import field_errors, validation_error

logger = logging.getLogger(__name__)

# Statuses Sanic raises on its own, and the contract error each one becomes.
_SANIC_STATUS: dict[int, type[errors.ApiError]] = {
    400: errors.ValidationFailedError,
    401: errors.UnauthenticatedError,
    403: errors.ForbiddenError,
    404: errors.NotFoundError,
    406: errors.NotAcceptableError,
    412: errors.PreconditionFailedError,
    413: errors.PayloadTooLargeError,
    415: errors.UnsupportedMediaTypeError,
    503: errors.UnavailableError,
}

HEADERS_TOO_LARGE_MESSAGE = "The request's URL and headers are too large."

# Packages whose code talks to the database: an OSError (refused, reset, unreachable,
# timed out) raised from inside them is the database's connection failing. Anywhere else an
# OSError is some other socket or file: an HTTP client's, a timeout of the caller's own.
_DATABASE_DRIVERS = ("asyncpg", "aiosqlite", "sqlite3", "tortoise.backends")


def to_api_error(exception: BaseException) -> errors.ApiError:
    """The contract error for any exception (unknown ones become INTERNAL)."""
    if isinstance(exception, errors.ApiError):
        return exception
    if isinstance(exception, MethodNotAllowed):
        return errors.MethodNotAllowedError(list(exception.allowed_methods or []))
    if isinstance(exception, SanicException):
        return _from_sanic(exception)
    if isinstance(exception, PydanticValidationError):
        return validation_error(field_errors(exception))
    if isinstance(exception, DoesNotExist):
        return errors.NotFoundError()
    if isinstance(exception, IntegrityError):
        return errors.ConflictError()
    if is_database_down(exception):
        return errors.UnavailableError("The database is unavailable; try again shortly.")
    if is_database_busy(exception):
        return errors.UnavailableError("The database is busy; try again shortly.")
    return errors.InternalError()


def _from_sanic(exception: SanicException) -> errors.ApiError:
    status = exception.status_code
    if status == 400 and "json" in str(exception).lower():
        return errors.MalformedJsonError()
    if status == 413 and "header" in str(exception).lower():
        # Sanic refuses a request line + headers above REQUEST_MAX_HEADER_SIZE (8 KiB) with
        # 413 before reading them; the contract has no 431, so say what was too large.
        return errors.PayloadTooLargeError(HEADERS_TOO_LARGE_MESSAGE)
    error_class = _SANIC_STATUS.get(status)
    if error_class is not None:
        return error_class()
    if 400 <= status < 500:
        # Rare protocol-level refusals (417, 416...): still the contract's shape.
        return errors.ValidationFailedError(str(exception) or "The request is not valid.")
    return errors.InternalError()


def is_database_down(exception: BaseException) -> bool:
    """Whether ``exception``, or one it was raised while handling, says the database is down.

    That is: Tortoise could not connect (``DBConnectionError``), asyncpg reports a lost or
    refused connection or a server shutting down (``_is_postgres_down``), or an OSError was
    raised by the database driver's own code (``_is_driver_connection_error``). Any other
    OSError or timeout (an HTTP client's ``ClientOSError``, an ``asyncio.timeout`` of the
    caller's) is not the database and stays a 500.

    The chain matters: when PostgreSQL shuts down under a query, asyncpg raises
    ``AdminShutdownError``, and returning the broken connection to the pool may then raise
    an unrelated-looking client error, the shutdown being only its ``__context__``.
    """
    seen: set[int] = set()
    current: BaseException | None = exception
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (
            isinstance(current, DBConnectionError)
            or _is_postgres_down(current)
            or _is_driver_connection_error(current)
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


# SQLite's primary result codes for a lock another connection held past busy_timeout.
_SQLITE_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def is_database_busy(exception: BaseException) -> bool:
    """Whether ``exception``, or one it was raised while handling, is SQLite's "database is
    locked": writers queue for the lock (``api_shared.sqlite``), and one that waited longer
    than ``busy_timeout`` is told to come back (503), not that the server failed."""
    seen: set[int] = set()
    current: BaseException | None = exception
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        # An extended result code (SQLITE_BUSY_SNAPSHOT...) keeps its primary's in its low byte.
        code = getattr(current, "sqlite_errorcode", None)
        if isinstance(current, sqlite3.OperationalError) and (code or 0) & 0xFF in _SQLITE_BUSY:
            return True
        current = current.__cause__ or current.__context__
    return False


def _is_driver_connection_error(exception: BaseException) -> bool:
    """An OSError raised while the database driver was running: its socket or file failed.

    asyncpg's pool opens connections lazily, so a refused or reset connection, an
    unreachable host or asyncpg's own connect timeout (all OSErrors) surface from inside
    ``asyncpg`` frames; the traceback shows where the error passed through.
    """
    if not isinstance(exception, OSError):
        return False
    frame = exception.__traceback__
    while frame is not None:
        module = str(frame.tb_frame.f_globals.get("__name__", ""))
        if any(module == d or module.startswith(f"{d}.") for d in _DATABASE_DRIVERS):
            return True
        frame = frame.tb_next
    return False


def _is_postgres_down(exception: BaseException) -> bool:
    # asyncpg raises its own hierarchy; import lazily so SQLite-only setups need not load it.
    try:
        from asyncpg.exceptions import (
            InsufficientResourcesError,
            InterfaceError,
            InternalClientError,
            OperatorInterventionError,
            PostgresConnectionError,
        )
    except ImportError:  # pragma: no cover - asyncpg is a dependency
        return False
    # Class 08 (connection exceptions), 57 (shutting down, starting up, cancelled),
    # 53 (too many connections, out of memory), a connection closed under the client, and
    # a connection whose session the server ended mid-protocol: asyncpg then reports
    # "cannot switch to state N; another operation is in progress" (MagicStack/asyncpg#1069)
    # and the pool discards that connection when it is released.
    return isinstance(
        exception,
        PostgresConnectionError
        | OperatorInterventionError
        | InsufficientResourcesError
        | InterfaceError
        | InternalClientError,
    )


def _routable_methods(request: Request) -> list[str]:
    """The methods some route serves at the request's path."""
    allowed = []
    for method in HTTP_METHODS:
        try:
            request.app.router.get(request.path, method, request.headers.get("host"))
        except SanicException:
            continue
        allowed.append(str(method))
    return allowed


def error_response(request: Request | None, error: errors.ApiError) -> HTTPResponse:
    """Render a contract error, with its headers and the request id."""
    headers = dict(error.headers)
    if request is not None:
        headers[REQUEST_ID_HEADER] = request_id_of(request)
    return json_response(error.body(), status=error.status, headers=headers)


class ContractErrorHandler(ErrorHandler):
    """Sanic error handler answering every failure in the contract's shape, and telling a
    cancelled request from a failed one."""

    def default(self, request: Request, exception: Exception) -> HTTPResponse:
        # Typed Exception by Sanic, yet a CancelledError (a BaseException) comes here too.
        if is_cancellation(exception):
            return cancelled_response(request, exception)
        error = to_api_error(exception)
        if isinstance(exception, MethodNotAllowed) and not exception.allowed_methods and request:
            # sanic-routing drops the allowed methods on dynamic paths; ask the router again.
            error = errors.MethodNotAllowedError(_routable_methods(request))
        if isinstance(error, errors.InternalError) and error is not exception:
            logger.error(
                "unhandled error",
                exc_info=exception,
                extra={"request_id": request_id_of(request) if request else None},
            )
        elif isinstance(error, errors.UnavailableError) and error is not exception:
            logger.warning("dependency unavailable: %s", type(exception).__name__)
        return error_response(request, error)


_CONTROL_BYTES = re.compile(rb"[\x00-\x20\x7f]")
STAND_IN_METHOD = "NONE"  # what sanic.http.http1.Http.create_empty_request passes


class ContractRequest(Request):
    """Sanic's request, able to stand in for a request whose target has control bytes.

    To answer a malformed request, Sanic builds a stand-in request (method ``NONE``) from the
    same target; for a target with a raw NUL that fails again, and the connection was closed
    without any answer. The stand-in gets the target percent-encoded instead, so the client
    receives the 400 in the contract's shape.
    """

    def __init__(self, url_bytes: bytes, *args: Any, **kwargs: Any) -> None:
        try:
            super().__init__(url_bytes, *args, **kwargs)
        except BadRequest:
            if kwargs.get("method") != STAND_IN_METHOD:
                raise
            escaped = _CONTROL_BYTES.sub(lambda match: b"%%%02X" % match[0][0], url_bytes)
            super().__init__(escaped, *args, **kwargs)


def install_error_handler(app: App) -> None:
    """Make every failure of ``app`` answer with the contract's body and status."""
    app.error_handler = ContractErrorHandler()
    # Sanic checks FALLBACK_ERROR_FORMAT for errors raised before routing; keep it JSON.
    app.config.FALLBACK_ERROR_FORMAT = "json"
