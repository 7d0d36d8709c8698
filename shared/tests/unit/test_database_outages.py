"""A database that is down is 503 UNAVAILABLE, whatever asyncpg or Tortoise raise for it."""

from __future__ import annotations

import pytest
from asyncpg import exceptions as pg
from tortoise.exceptions import DBConnectionError

from api_shared import errors
from api_shared.error_handler import to_api_error


def _raised_while_handling(outage: BaseException, then: BaseException) -> BaseException:
    try:
        try:
            raise outage
        except type(outage):
            raise then  # noqa: B904 - the implicit __context__ is the point
    except type(then) as raised:
        return raised


@pytest.mark.parametrize(
    "exception",
    [
        DBConnectionError("cannot connect"),
        ConnectionRefusedError(111, "Connect call failed"),
        OSError("Multiple exceptions: [Errno 111] Connect call failed"),
        TimeoutError(),
        pg.CannotConnectNowError("the database system is starting up"),
        pg.AdminShutdownError("terminating connection due to administrator command"),
        pg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        pg.TooManyConnectionsError("sorry, too many clients already"),
        pg.InterfaceError("connection is closed"),
        # What a query on a connection whose session the server ended may raise instead.
        pg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
    ],
    ids=lambda exception: type(exception).__name__,
)
def test_a_database_outage_is_503_unavailable(exception: BaseException) -> None:
    error = to_api_error(exception)

    assert isinstance(error, errors.UnavailableError)
    assert error.headers["Retry-After"]


def test_an_error_raised_while_handling_a_shutdown_is_still_the_outage() -> None:
    # Tortoise may wrap it, or fail again while cleaning up after it.
    exception = _raised_while_handling(
        pg.AdminShutdownError("terminating connection due to administrator command"),
        RuntimeError("rollback failed"),
    )

    assert isinstance(to_api_error(exception), errors.UnavailableError)


@pytest.mark.parametrize(
    "exception",
    [
        ValueError("a bug"),
        _raised_while_handling(KeyError("a"), ValueError("another bug")),
    ],
    ids=["plain-bug", "bug-in-a-bug"],
)
def test_other_failures_stay_internal(exception: BaseException) -> None:
    assert isinstance(to_api_error(exception), errors.InternalError)
