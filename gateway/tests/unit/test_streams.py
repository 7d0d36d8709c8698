"""The streaming proxy's pure parts: the cap on open streams and their end at shutdown, and
what each failure before an answer comes to."""

from __future__ import annotations

import asyncio

import pytest

from api_shared.errors import BadGatewayError, UnavailableError, UpstreamTimeoutError
from gateway.upstream.connection import UpstreamClosedError, UpstreamProtocolError
from gateway.upstream.pool import ConnectFailedError
from gateway.upstream.stream import SHUTDOWN, OpenStreams
from gateway.upstream.stream_client import ClientFailure, _failure


def test_streams_are_counted_while_open_and_one_beyond_the_limit_is_503() -> None:
    counts: list[int] = []
    streams = OpenStreams(2, on_count=counts.append)

    with streams.slot(), streams.slot():
        with pytest.raises(UnavailableError) as refused, streams.slot():
            pass
        held = len(streams)

    assert held == 2
    assert refused.value.headers["Retry-After"] == "1"
    assert counts == [1, 2, 1, 0]
    assert len(streams) == 0


async def test_end_all_ends_every_open_stream_and_refuses_new_ones() -> None:
    streams = OpenStreams(10)
    with streams.slot() as copying, streams.slot() as connecting:
        copying.copy = asyncio.create_task(asyncio.sleep(3600))
        await asyncio.sleep(0)  # the copy is under way
        streams.end_all()
        with pytest.raises(UnavailableError), streams.slot():
            pass
        with pytest.raises(asyncio.CancelledError):
            await copying.copy

    # One still connecting has no copy yet: it learns of its end once its answer comes.
    assert (copying.ended_by, connecting.ended_by) == (SHUTDOWN, SHUTDOWN)


def test_a_stream_ended_twice_keeps_its_first_reason() -> None:
    streams = OpenStreams(1)
    with streams.slot() as stream:
        stream.end("idle timeout")
        streams.end_all()

    assert stream.ended_by == "idle timeout"


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (ConnectFailedError(ConnectionRefusedError("refused")), "NotConnectedError"),
        (ConnectFailedError(TimeoutError("slow")), "NotConnectedError"),
        (UpstreamClosedError(repr(ConnectionResetError("reset"))), "DisconnectedError"),
        (UpstreamClosedError(repr(BrokenPipeError("reset"))), "DisconnectedError"),
        (UpstreamClosedError("closed before any byte of the response"), "DisconnectedError"),
        (UpstreamProtocolError("illegal status line"), BadGatewayError),
        (TimeoutError(), UpstreamTimeoutError),
    ],
)
def test_each_failure_before_an_answer_is_another_try_or_the_contracts_error(
    error: ClientFailure, outcome: str | type[Exception]
) -> None:
    failure = _failure(error)

    if isinstance(outcome, str):  # another replica may answer
        assert type(failure).__name__ == outcome
        # What failed: the connection's own error, when it was never made.
        cause = error.cause if isinstance(error, ConnectFailedError) else error
        assert failure.cause is cause  # type: ignore[attr-defined]
    else:
        assert isinstance(failure, outcome)
