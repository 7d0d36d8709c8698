"""The contract's error handler tells a cancelled request from a failed one
(api_shared.cancelled): INFO and 499 for the one, ERROR and 500 for the other."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sanic import Request, Sanic
from sanic.exceptions import RequestCancelled
from sanic.models.protocol_types import TransportProtocol

from api_shared.error_handler import ContractErrorHandler
from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings


def a_request(request_id: str) -> Request:
    Sanic.test_mode = True
    app = create_service_app("cancelled-unit", ServiceSettings(environment="development"))
    headers = {"x-request-id": request_id}
    transport: TransportProtocol | None = None  # never written to: the handler only answers
    return Request(b"/orders/1", headers, "1.1", "GET", transport, app)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        (RequestCancelled(), "the client closed the connection"),
        (asyncio.CancelledError(), "the server cancelled it"),
    ],
)
def test_a_cancelled_request_is_an_info_line_and_499(
    exception: BaseException, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    response = ContractErrorHandler().default(a_request("cancelled-1"), exception)  # type: ignore[arg-type]

    assert response.status == 499
    [line] = [r for r in caplog.records if r.getMessage() == "request cancelled"]
    assert line.name == "api_shared.cancelled"
    assert line.levelno == logging.INFO
    assert line.exc_info is None
    assert line.requestId == "cancelled-1"  # type: ignore[attr-defined]  # an extra
    assert line.reason == reason  # type: ignore[attr-defined]
    assert line.method == "GET"  # type: ignore[attr-defined]
    assert line.path == "/orders/1"  # type: ignore[attr-defined]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_failed_request_is_still_an_unhandled_error(caplog: pytest.LogCaptureFixture) -> None:
    response = ContractErrorHandler().default(a_request("failed-1"), RuntimeError("boom"))

    assert response.status == 500
    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.getMessage() == "unhandled error"
    assert line.levelno == logging.ERROR
    assert line.exc_info is not None
