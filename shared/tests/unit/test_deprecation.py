"""A deprecated alias's answers and errors say so, and its operation is marked deprecated."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from sanic.response import HTTPResponse, empty
from sanic_ext.extensions.openapi.builders import OperationStore

from api_shared.deprecation import (
    NOUN_ROUTES_SINCE,
    NOUN_ROUTES_SUNSET,
    deprecated_alias,
    deprecation_headers,
)
from api_shared.errors import NotFoundError


def test_the_headers_follow_rfc_9745_and_rfc_8594() -> None:
    headers = deprecation_headers("/api/things/1/parts")

    assert headers["Deprecation"] == "@1795737600"
    assert datetime.fromtimestamp(1795737600, UTC) == NOUN_ROUTES_SINCE
    assert headers["Sunset"] == "Thu, 27 May 2027 00:00:00 GMT"
    assert parsedate_to_datetime(headers["Sunset"]) == NOUN_ROUTES_SUNSET
    assert headers["Link"] == '</api/things/1/parts>; rel="successor-version"'


async def test_an_answer_gets_the_headers_with_the_successor_path_filled_in() -> None:
    @deprecated_alias("/api/things/{thing_id}/parts")
    async def handler(request: Any, thing_id: str) -> HTTPResponse:
        return empty()

    response = await handler(None, thing_id="t1")

    assert response.status == 204
    assert response.headers["Link"] == '</api/things/t1/parts>; rel="successor-version"'
    assert response.headers["Deprecation"] == "@1795737600"
    assert OperationStore()[handler].deprecated is True


async def test_a_contract_error_gets_them_too() -> None:
    @deprecated_alias("/api/things")
    async def handler(request: Any) -> HTTPResponse:
        raise NotFoundError("no such thing")

    with pytest.raises(NotFoundError) as raised:
        await handler(None)

    assert raised.value.headers["Sunset"] == "Thu, 27 May 2027 00:00:00 GMT"
    assert raised.value.headers["Link"] == '</api/things>; rel="successor-version"'
