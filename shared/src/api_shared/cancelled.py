"""A request whose client went away is not an error: it is logged as cancelled, status 499.

When a client closes its connection before its answer is written (a browser tab closed, a
timeout of its own, a gateway giving up), Sanic cancels the handler and hands
``RequestCancelled`` (an ``asyncio.CancelledError``) to the app's error handler. Taken for
an unexpected exception, it would be an ERROR line "unhandled error" with a traceback and a
500 counted by the metrics, for something that is neither a bug nor an outage. The
contract's error handler (``api_shared.error_handler``, which every app of the frame has)
answers it here instead: an INFO line saying what happened, and the status the access line
and the metrics record is 499, nginx's "client closed request" (no client reads it).
"""

from __future__ import annotations

import logging
from asyncio import CancelledError

from sanic import Request
from sanic.exceptions import RequestCancelled
from sanic.response import HTTPResponse

from api_shared.request_id import request_id_of

logger = logging.getLogger(__name__)

CLIENT_CLOSED_REQUEST = 499


def is_cancellation(exception: BaseException) -> bool:
    """Whether the request was cancelled rather than failed."""
    return isinstance(exception, CancelledError)


def cancelled_response(request: Request | None, exception: BaseException) -> HTTPResponse:
    """Log the cancelled request (INFO, no traceback); its 499 for the access line."""
    logger.info(
        "request cancelled",
        extra={
            "requestId": request_id_of(request) if request else None,
            "method": request.method if request else None,
            "path": request.path if request else None,
            # Sanic says RequestCancelled when the connection was lost; a bare
            # CancelledError comes from the server itself (stopping).
            "reason": (
                "the client closed the connection"
                if isinstance(exception, RequestCancelled)
                else "the server cancelled it"
            ),
        },
    )
    return HTTPResponse(status=CLIENT_CLOSED_REQUEST)
