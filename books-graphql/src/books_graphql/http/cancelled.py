"""A request whose client went away is not an error: it is logged as cancelled, status 499.

When a client closes its connection before its answer is written (a browser tab closed, a
timeout of its own, a gateway giving up), Sanic cancels the handler and hands
``RequestCancelled`` (an ``asyncio.CancelledError``) to the app's error handler. The
contract's handler took it for an unexpected exception: an ERROR line "unhandled error"
with a traceback, and a 500 counted by the metrics, for something that is neither a bug
nor an outage. Here it is an INFO line saying what happened, and the status the access line
and the metrics record is 499, nginx's "client closed request" (no client reads it).
"""

from __future__ import annotations

import logging
from asyncio import CancelledError

from sanic import Request
from sanic.exceptions import RequestCancelled
from sanic.response import HTTPResponse

from api_shared.error_handler import ContractErrorHandler
from api_shared.request_id import request_id_of
from api_shared.types import App

logger = logging.getLogger(__name__)

CLIENT_CLOSED_REQUEST = 499


class CancellationAwareErrorHandler(ContractErrorHandler):
    """The contract's error handler, telling a cancelled request from a failed one."""

    def default(self, request: Request, exception: Exception) -> HTTPResponse:
        # Typed Exception by Sanic, yet a CancelledError (a BaseException) comes here too.
        raised: BaseException = exception
        if not isinstance(raised, CancelledError):
            return super().default(request, exception)
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
                    if isinstance(raised, RequestCancelled)
                    else "the server cancelled it"
                ),
            },
        )
        return HTTPResponse(status=CLIENT_CLOSED_REQUEST)


def install_cancellation_handler(app: App) -> None:
    """Replace ``app``'s error handler (the contract's) by one that knows cancellations."""
    app.error_handler = CancellationAwareErrorHandler()
