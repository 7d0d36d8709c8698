"""Response sends the header block Sanic's HTTPResponse sends, sanitised the same way."""

from __future__ import annotations

from typing import Any

import pytest
from sanic.compat import Header
from sanic.response import HTTPResponse

from api_shared.responses import Response

CASES = {
    "plain": ({"X-Request-ID": "abc", "Vary": "Origin", "Cache-Control": "no-store"}, 200),
    "repeated": (Header([("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]), 200),
    "not text": ({"X-Count": 5}, 200),
    "no body status": ({"X-Request-ID": "abc"}, 204),
    "non-UTF-8 as received": ({"X-Name": "caf\udce9"}, 200),
    "split attempt in a value": ({"X-Note": "a\r\nSet-Cookie: stolen=1"}, 200),
    "NUL and LF in a name": ({"X-Bad\n": "1", "X-Also\x00": "2"}, 200),
}


@pytest.mark.parametrize(("headers", "status"), list(CASES.values()), ids=list(CASES))
def test_the_header_block_is_sanics(headers: Any, status: int) -> None:
    def block(kind: type[HTTPResponse]) -> list[tuple[bytes, bytes]]:
        copy = Header(headers.items()) if isinstance(headers, Header) else dict(headers)
        response = kind(b"{}", status=status, headers=copy, content_type="application/json")
        return list(response.processed_headers)

    assert block(Response) == block(HTTPResponse)


def test_a_value_that_would_split_the_block_loses_its_line_breaks() -> None:
    response = Response(b"", headers={"X-Note": "a\r\nSet-Cookie: stolen=1"})

    assert (b"X-Note", b"aSet-Cookie: stolen=1") in list(response.processed_headers)
