"""Server-Sent Events framing: what a client parses back is what was framed."""

from __future__ import annotations

import pytest
from httpx_sse._decoders import SSEDecoder

from api_shared.sse import UnframeableError, comment_frame, event_frame, retry_frame


def _parsed(frame: bytes) -> list[tuple[str, str, str]]:
    """The events a client's decoder (httpx-sse's) reads from ``frame``."""
    decoder, events = SSEDecoder(), []
    for line in frame.decode().splitlines():
        sse = decoder.decode(line)
        if sse is not None:
            events.append((sse.id, sse.event, sse.data))
    return events


def test_an_event_frame_is_read_back_as_framed() -> None:
    frame = event_frame("e-1", "orders.order.created", '{"id":"o-1"}')
    assert frame == b'id: e-1\nevent: orders.order.created\ndata: {"id":"o-1"}\n\n'
    assert _parsed(frame) == [("e-1", "orders.order.created", '{"id":"o-1"}')]


def test_data_over_several_lines_is_sent_a_line_per_data_field() -> None:
    assert _parsed(event_frame("e-2", "t", "a\r\nb\nc")) == [("e-2", "t", "a\nb\nc")]


@pytest.mark.parametrize("bad", ["e\n1", "e\r1", "e\x001"])
def test_an_id_or_type_with_a_line_break_or_nul_is_refused(bad: str) -> None:
    with pytest.raises(UnframeableError):
        event_frame(bad, "t", "{}")
    with pytest.raises(UnframeableError):
        event_frame("e", bad, "{}")
    with pytest.raises(UnframeableError):
        comment_frame(bad)


def test_comments_and_retry_carry_no_event() -> None:
    assert comment_frame("heartbeat") == b": heartbeat\n\n"
    assert retry_frame(2000) == b"retry: 2000\n\n"
    assert _parsed(comment_frame("heartbeat")) == []
