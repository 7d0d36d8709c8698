"""A response read as it arrives, whatever the size of the pieces it arrives in: its head once
whole, then its body's pieces, decoded from their framing as they come (RFC 9112 §6.3).

Sans-IO: the stream client (``stream_client``) feeds it what the socket gives and takes what
is decoded. The bytes are parsed by httptools (llhttp), as ``connection`` parses the pooled
responses: one parser for the gateway's whole client. A body is framed by chunked coding
(chunk extensions ignored, trailers dropped: a proxy may, RFC 9112 §7.1.2), by Content-Length,
or by the connection's close. Interim 1xx responses are skipped. Whatever the body's content
coding, it is kept as received.

Failures, as ``connection`` names them: ``UpstreamClosedError`` when the connection ended
before any byte of the response; ``UpstreamProtocolError`` when the bytes are not HTTP (a
chunk size that is not hexadecimal, say) or the response ended in the middle.
"""

from __future__ import annotations

from httptools import HttpParserError, HttpParserUpgrade, HttpResponseParser

from gateway.upstream.connection import (
    UpstreamClosedError,
    UpstreamProtocolError,
    body_ends_at_close,
)


class ResponseReader:
    """One response's bytes in (``feed``, then ``end`` if the connection closes), its head and
    decoded body out (``status``, ``headers``, ``take``). Bytes after its end are ignored: the
    connection carries this response only."""

    def __init__(self) -> None:
        self._parser = HttpResponseParser(self)
        self.received = False  # any byte of the response
        self.head_done = False  # the final response's head is in: ``status``, ``headers``
        self.complete = False  # the body has ended, as its framing says
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []  # as received, repeats kept
        self.failure: UpstreamProtocolError | None = None  # the bytes stopped being HTTP
        self._pieces: list[bytes] = []
        self._interim = False

    def feed(self, data: bytes) -> None:
        """Parse ``data``, the next bytes from the connection.

        Raises ``UpstreamProtocolError`` where they stop being HTTP; but while body bytes
        decoded before that point are still to be taken, at the next call only (``failure``
        says so meanwhile): the whole events before a broken chunk still reach the client.
        """
        if self.failure is not None:
            raise self.failure
        if self.complete or not data:
            return
        self.received = True
        try:
            self._parser.feed_data(data)
        except (HttpParserError, HttpParserUpgrade) as error:
            failure = UpstreamProtocolError(str(error) or type(error).__name__)
            failure.__cause__ = error
            self.failure = failure
            if not self._pieces:
                raise failure from error

    def end(self) -> None:
        """The connection has closed: the end of a body delimited by it (RFC 9112 §6.3 ¶8), or
        of a response cut short."""
        if self.failure is not None:
            raise self.failure
        if self.complete:
            return
        if not self.received:
            raise UpstreamClosedError("closed before any byte of the response")
        if self.head_done and body_ends_at_close(self.headers):
            self.complete = True
            return
        raise UpstreamProtocolError("the response ended before it was complete")

    def take(self) -> bytes:
        """The body bytes decoded since the last call (empty if none)."""
        pieces = self._pieces
        if not pieces:
            return b""
        self._pieces = []
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.head_done:  # a trailer's fields are not the head's
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.head_done:
            return
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self._interim = True  # 100 Continue and the like: the final response follows
            return
        self.status = status
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self._pieces.append(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            self.headers = []
            return
        self.complete = True
