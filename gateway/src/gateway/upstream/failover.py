"""Failing over between an upstream's replicas: the one loop both proxies use.

A replica that was never reached (``NotConnectedError``) is marked down and the next one is
asked; one whose connection broke before an answer (``DisconnectedError``) may have acted
on the request, so only an idempotent request goes to the next one. At most two replicas
are asked: a third failure in a row says the service is down, not a replica.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from api_shared.errors import ApiError, UnavailableError
from gateway.upstream.replicas import Target, Upstream

logger = logging.getLogger(__name__)

T = TypeVar("T")

FailureListener = Callable[[str, str], None]
"""Called with (upstream name, failure kind) for every upstream failure."""

MAX_ATTEMPTS = 2


class NotConnectedError(Exception):
    """No connection to the replica (refused, unresolvable, not within the timeout): safe to
    ask another replica."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


class DisconnectedError(Exception):
    """The connection broke before an answer: only an idempotent request may be sent again."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


async def first_answer(
    upstream: Upstream,
    send: Callable[[Target], Awaitable[T]],
    *,
    idempotent: bool,
    on_failure: FailureListener,
) -> T:
    """What ``send`` got from the first replica that answered (one, unless ``idempotent``)."""
    attempts = upstream.candidates()[: MAX_ATTEMPTS if idempotent else 1]
    for attempt, target in enumerate(attempts, start=1):
        try:
            answer = await send(target)
        except NotConnectedError as failure:
            upstream.mark_down(target)
            on_failure(upstream.name, "connect")
            log_retry("upstream connection failed", upstream, target, failure.cause, attempt)
            continue
        except DisconnectedError as failure:
            on_failure(upstream.name, "disconnect")
            if not idempotent:
                # It may have been acted on: the client decides (Idempotency-Key).
                raise UnavailableError("The upstream service closed the connection.") from None
            log_retry(
                "upstream connection closed before an answer",
                upstream,
                target,
                failure.cause,
                attempt,
            )
            continue
        except ApiError as error:
            on_failure(upstream.name, error.code.lower())
            raise
        upstream.mark_up(target)
        return answer
    raise UnavailableError(f"The {upstream.name} service is unavailable; try again shortly.")


def log_retry(
    message: str, upstream: Upstream, target: Target, cause: BaseException, attempt: int
) -> None:
    """One warning line per failed attempt on a replica (the next one may answer)."""
    logger.warning(
        message,
        extra={
            "upstream": upstream.name,
            "target": target.url,
            "error": type(cause).__name__,
            "attempt": attempt,
        },
    )
