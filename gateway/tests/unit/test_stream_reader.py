"""A streamed response read as it arrives (``reader``): its head, then its body decoded from
chunked coding, Content-Length or the close, however the bytes are split; and what the relay
makes of a body that breaks, goes quiet or ends (``stream``)."""

from __future__ import annotations

import asyncio
import logging
from typing import cast

import pytest
from sanic.response import BaseHTTPResponse

from gateway.upstream.connection import UpstreamClosedError, UpstreamProtocolError
from gateway.upstream.reader import ResponseReader
from gateway.upstream.stream import (
    IDLE,
    UPSTREAM_BROKEN,
    UPSTREAM_ENDED,
    OpenStream,
    _copy,
    _outcome,
)
from gateway.upstream.stream_client import UpstreamStream

CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream; charset=utf-8\r\n"
    b"Transfer-Encoding: chunked\r\n"
    b"\r\n"
)
FRAME = b"id: e-1\nevent: orders.order.shipped\ndata: {}\n\n"
# Two chunks, the first with extensions (ignored), then the last chunk with a trailer.
CHUNKED = (
    CHUNKED_HEAD
    + b'%x;name=value;quoted="a b"\r\n%b\r\n' % (len(FRAME), FRAME)
    + b"d\r\n: heartbeat\n\n\r\n"
    + b"0\r\nX-Trailer: dropped\r\n\r\n"
)


def read_in_pieces(data: bytes, cuts: list[int]) -> tuple[ResponseReader, bytes]:
    """``data`` fed in the pieces ``cuts`` make of it; the reader and the body it decoded."""
    reader, body = ResponseReader(), b""
    for start, stop in zip([0, *cuts], [*cuts, len(data)], strict=True):
        reader.feed(data[start:stop])
        body += reader.take()
    return reader, body


def test_a_chunked_body_is_the_same_wherever_its_bytes_are_split() -> None:
    every_split = [[cut] for cut in range(1, len(CHUNKED))]
    byte_by_byte = [list(range(1, len(CHUNKED)))]

    for cuts in [[], *every_split, *byte_by_byte]:
        reader, body = read_in_pieces(CHUNKED, cuts)

        assert (reader.status, reader.complete, body) == (200, True, FRAME + b": heartbeat\n\n")
        # The trailer is not the head's: it does not reach the client.
        assert [name for name, _ in reader.headers] == [b"Content-Type", b"Transfer-Encoding"]


def test_the_head_is_known_before_the_body_and_each_chunk_as_it_arrives() -> None:
    reader = ResponseReader()

    reader.feed(CHUNKED_HEAD)
    at_head = (reader.head_done, reader.take())
    reader.feed(b"%x\r\n%b\r\n" % (len(FRAME), FRAME))
    first = reader.take()

    assert at_head == (True, b"")
    assert first == FRAME
    assert not reader.complete


def test_a_content_length_body_ends_at_its_length_and_what_follows_is_ignored() -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n\r\n"
    for cut in range(1, len(data)):
        reader, body = read_in_pieces(data, [cut])

        assert (reader.complete, body) == (True, b"hello")
        assert reader.headers == [(b"Content-Length", b"5")]


def test_a_body_without_length_or_chunks_ends_with_the_connection() -> None:
    reader = ResponseReader()
    reader.feed(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nid: 1\n")
    before_close = reader.complete

    reader.end()

    assert (before_close, reader.complete, reader.take()) == (False, True, b"id: 1\n")


def test_an_interim_response_is_skipped() -> None:
    data = b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n" + CHUNKED
    reader, body = read_in_pieces(data, [10, 45])

    assert (reader.status, body) == (200, FRAME + b": heartbeat\n\n")
    assert (b"X-Interim", b"1") not in reader.headers


def test_a_connection_closed_before_any_byte_or_in_the_middle_fails_apart() -> None:
    silent, cut = ResponseReader(), ResponseReader()
    cut.feed(CHUNKED_HEAD + b"5\r\nhel")

    with pytest.raises(UpstreamClosedError):
        silent.end()  # another replica may answer
    with pytest.raises(UpstreamProtocolError):
        cut.end()  # a truncated stream is no whole one


@pytest.mark.parametrize("size", [b"zz", b"-1", b"fffffffffffffffffffff"])
def test_a_malformed_chunk_size_is_a_protocol_error_after_what_came_before(size: bytes) -> None:
    reader = ResponseReader()
    reader.feed(CHUNKED_HEAD + b"%x\r\n%b\r\n" % (len(FRAME), FRAME))
    before = reader.take()

    with pytest.raises(UpstreamProtocolError):
        reader.feed(size + b"\r\nabc\r\n")

    assert before == FRAME


def test_what_came_before_a_malformed_chunk_size_in_the_same_bytes_is_taken_first() -> None:
    reader = ResponseReader()
    reader.feed(CHUNKED_HEAD + b"%x\r\n%b\r\nzz\r\n" % (len(FRAME), FRAME))
    before = reader.take()

    with pytest.raises(UpstreamProtocolError):
        reader.feed(b"abc\r\n")
    with pytest.raises(UpstreamProtocolError):
        reader.end()
    assert before == FRAME
    assert reader.failure is not None


class _Writer:
    """The stream's connection, as the relay sees it: closed or not."""

    closed = False

    def close(self) -> None:
        self.closed = True


class _Sink:
    """The client's response: what was written to it."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def send(self, data: bytes) -> None:
        self.sent.append(data)


async def relay(*incoming: bytes, idle_timeout_s: float = 5.0) -> tuple[str, list[bytes]]:
    """Why a stream whose body brings ``incoming`` (then nothing more) ended, and what
    reached the client."""
    response = ResponseReader()
    response.feed(CHUNKED_HEAD)
    reader = asyncio.StreamReader()
    for data in incoming:
        reader.feed_data(data)
    source = UpstreamStream(reader, cast(asyncio.StreamWriter, _Writer()), response, idle_timeout_s)
    sink, stream = _Sink(), OpenStream()
    copying = asyncio.create_task(_copy(source, cast(BaseHTTPResponse, sink), stream))
    reason = await _outcome(copying, stream)
    assert stream.sent == sum(map(len, sink.sent))
    return reason, sink.sent


async def test_a_malformed_chunk_size_ends_the_stream_broken_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream.stream")

    reason, sent = await relay(b"%x\r\n%b\r\n" % (len(FRAME), FRAME), b"zz\r\nabc\r\n")

    assert (reason, sent) == (UPSTREAM_BROKEN, [FRAME])
    (record,) = [r for r in caplog.records if r.name == "gateway.upstream.stream"]
    assert (record.levelname, record.getMessage()) == ("WARNING", "upstream stream broken")
    assert record.__dict__["error"] == "UpstreamProtocolError"


async def test_a_stream_ends_with_its_last_chunk_and_a_silent_one_at_the_idle_timeout() -> None:
    pieces = [b"%x\r\n%b\r\n" % (len(FRAME), FRAME), b"0\r\n\r\n"]
    ended = await relay(*pieces)
    silent = await relay(pieces[0], idle_timeout_s=0.05)

    assert ended == (UPSTREAM_ENDED, [FRAME])
    assert silent == (IDLE, [FRAME])
