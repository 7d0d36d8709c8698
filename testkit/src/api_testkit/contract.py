"""What every refusal looks like: a 4xx in the contract's shape, with a request id."""

from __future__ import annotations

from typing import Any

import httpx

from .raw_http import RawResponse


def assert_refused(
    response: httpx.Response | RawResponse, status: int | None = None, code: str | None = None
) -> dict[str, Any]:
    """A 4xx in the contract's shape, with a request id; returns the error object."""
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    if status is not None:
        assert response.status_code == status, response.content[:300]
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert {"code", "message"} <= set(error) <= {"code", "message", "fields"}, error
    assert isinstance(error["code"], str)
    assert isinstance(error["message"], str)
    assert error["message"]
    if code is not None:
        assert error["code"] == code, error
    assert response.headers.get("x-request-id")
    return error
