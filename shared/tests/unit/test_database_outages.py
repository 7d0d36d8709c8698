"""A database that is down is 503 UNAVAILABLE, whatever asyncpg or Tortoise raise for it.

Only the database's failures are: an OSError or timeout from anything else (an HTTP
client, the caller's own deadline) is a 500. The OSErrors below are real ones, raised by
asyncpg and aiohttp connecting to a port where nothing listens or nothing answers.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Iterator

import aiohttp
import asyncpg
import pytest
from asyncpg import exceptions as pg
from tortoise.exceptions import DBConnectionError

from api_shared import errors
from api_shared.error_handler import is_database_down, to_api_error


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


@pytest.fixture
def closed_port() -> int:
    """A local port where nothing listens: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A local port that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


async def _raised(awaitable: Awaitable[object]) -> BaseException:
    try:
        await awaitable
    except Exception as error:
        return error
    raise AssertionError("expected a failure")


async def test_a_refused_database_connection_is_503(closed_port: int) -> None:
    refused = await _raised(asyncpg.connect(host="127.0.0.1", port=closed_port, user="x"))

    assert isinstance(refused, OSError)
    assert isinstance(to_api_error(refused), errors.UnavailableError)


async def test_a_database_that_does_not_answer_the_connect_is_503(silent_port: int) -> None:
    timed_out = await _raised(
        asyncpg.connect(host="127.0.0.1", port=silent_port, user="x", timeout=0.2)
    )

    assert isinstance(timed_out, TimeoutError)
    assert isinstance(to_api_error(timed_out), errors.UnavailableError)


async def test_an_http_clients_refused_connection_is_not_a_database_outage(
    closed_port: int,
) -> None:
    async with aiohttp.ClientSession() as session:
        refused = await _raised(session.get(f"http://127.0.0.1:{closed_port}/"))

    assert isinstance(refused, aiohttp.ClientOSError)
    assert isinstance(refused, OSError)
    assert not is_database_down(refused)
    assert isinstance(to_api_error(refused), errors.InternalError)


async def test_the_callers_own_timeout_is_not_a_database_outage() -> None:
    timed_out = await _raised(asyncio.wait_for(asyncio.sleep(1), timeout=0.01))

    assert isinstance(timed_out, TimeoutError)
    assert not is_database_down(timed_out)


@pytest.mark.parametrize(
    "exception",
    [
        ConnectionRefusedError(111, "Connect call failed"),
        ConnectionResetError(104, "Connection reset by peer"),
        OSError("Multiple exceptions: [Errno 111] Connect call failed"),
        TimeoutError(),
    ],
    ids=lambda exception: type(exception).__name__,
)
def test_an_oserror_raised_outside_the_database_driver_is_not_an_outage(
    exception: BaseException,
) -> None:
    with pytest.raises(type(exception)) as raised:
        raise exception

    assert raised.value.__traceback__ is not None
    assert not is_database_down(raised.value)
