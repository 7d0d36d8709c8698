"""Server-Sent Events framing (the WHATWG HTML standard, §9.2 "Server-sent events").

A stream is ``text/event-stream``, UTF-8: frames of ``field: value`` lines ended by a blank
line. ``id`` sets the client's last event id, which a reconnecting ``EventSource`` sends back
as the ``Last-Event-ID`` header; ``retry`` sets its reconnection delay; a line starting with
``:`` is a comment, which clients ignore and proxies see as traffic (a heartbeat).
"""

from __future__ import annotations

from sanic import Request

MEDIA_TYPE = "text/event-stream"
CONTENT_TYPE = f"{MEDIA_TYPE}; charset=utf-8"
LAST_EVENT_ID_HEADER = "Last-Event-ID"
# Headers every stream answers with: never cached or stored; not buffered by a proxy that
# honours X-Accel-Buffering (nginx).
STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
_LINE_BREAKS = ("\r", "\n", "\0")


class UnframeableError(ValueError):
    """A field value that cannot be framed: a line break or NUL would end or corrupt it."""


def _field(name: str, value: str) -> str:
    if any(character in value for character in _LINE_BREAKS):
        raise UnframeableError(f"the {name} {value!r} holds a line break or NUL")
    return f"{name}: {value}\n"


def event_frame(event_id: str, event_type: str, data: str) -> bytes:
    """One event: its id, its type (the ``event`` field) and its data, a line per line."""
    lines = [_field("id", event_id), _field("event", event_type)]
    lines += [f"data: {line}\n" for line in data.replace("\r\n", "\n").split("\n")]
    return ("".join(lines) + "\n").encode()


def comment_frame(text: str) -> bytes:
    """A comment: ignored by clients, traffic for a proxy that closes idle connections."""
    if any(character in text for character in _LINE_BREAKS):
        raise UnframeableError(f"the comment {text!r} holds a line break or NUL")
    return f": {text}\n\n".encode()


def retry_frame(milliseconds: int) -> bytes:
    """How long a client waits before it reconnects after the stream ends."""
    return f"retry: {int(milliseconds)}\n\n".encode()


def last_event_id(request: Request) -> str | None:
    """The ``Last-Event-ID`` a reconnecting client sent; None when absent or empty."""
    value = request.headers.get(LAST_EVENT_ID_HEADER, "").strip()
    return value or None
