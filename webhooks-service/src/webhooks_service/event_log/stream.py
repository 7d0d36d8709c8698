"""``GET /api/events/stream`` (docs/api.md#event-stream): the caller's events, live, as
Server-Sent Events.

A stream is a subscription to the process's feed (``event_log.feed``) written to the client one
frame per event: its ``id`` the event's id, its ``event`` the type, its ``data`` the
CloudEvents document as delivered. A client that reconnects with ``Last-Event-ID`` gets the
events logged after that one from the log, up to the position the subscription was taken at,
then the live ones: no gap, no repeat. Who sees what is the event log's rule (``whose``).

Streams are counted per account (an API key's against its owner) and per client address (the
one the gateway resolved, ``api_shared.client_address``; IPv6 by its /64): ``feed``'s
caps. The caller was confirmed with users-service as the stream opened (``event_log.routes``).

The stream ends, and the client may reconnect, when: the access token expires (its ``exp``);
users-service no longer confirms the caller as they were (session ended, account suspended or
deleted, admin role lost, API key revoked or its scope gone; asked every ``recheck_s``); the
client is too slow (its subscription overflowed, or a frame waited ``send_timeout_s`` to be
written); the process is stopping. A comment every ``heartbeat_s`` keeps proxies from
closing an idle stream and shows a client the stream is alive.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from sanic import Request
from sanic.response.types import HTTPResponse

from api_shared.auth import Principal, Scope, bearer_token
from api_shared.client_address import client_address
from api_shared.errors import ApiError, ForbiddenError, UnauthenticatedError
from api_shared.ratelimit import address_key
from api_shared.sse import (
    CONTENT_TYPE,
    STREAM_HEADERS,
    UnframeableError,
    comment_frame,
    event_frame,
    retry_frame,
)
from api_shared.standing import CallerConfirmation
from webhooks_service.event_log.feed import READ_BATCH, EventFeed, Subscription
from webhooks_service.event_log.ports import EventLogReader
from webhooks_service.event_log.services import whose
from webhooks_service.models import LoggedEvent

logger = logging.getLogger(__name__)

HEARTBEAT = "heartbeat"


@dataclass(frozen=True, slots=True)
class StreamTimings:
    heartbeat_s: float  # a comment after this long without a frame
    recheck_s: float  # users-service is asked again about the caller this often
    send_timeout_s: float  # a frame not written in this long: the client is too slow
    retry_ms: int  # the reconnection delay a client is told


class EndedError(Exception):
    """The stream ends here; ``reason`` says why (the closing line of the log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EventStreams:
    """Serves the streams of one process."""

    def __init__(
        self,
        feed: EventFeed,
        log: EventLogReader,
        standing: CallerConfirmation,
        timings: StreamTimings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.feed, self.log, self.standing, self.timings = feed, log, standing, timings
        self.clock = clock

    async def serve(
        self,
        request: Request,
        caller: Principal,
        event_type: str | None,
        resume_after: LoggedEvent | None,
    ) -> None:
        """Answer ``request`` with the stream until it ends (module docstring)."""
        account = f"user:{caller.subject}"  # a key's subject is its owner
        address = address_key(client_address(request))
        async with self.feed.subscription(
            account, whose(caller), event_type, address
        ) as subscription:
            response = await request.respond(content_type=CONTENT_TYPE, headers=STREAM_HEADERS)
            sender = _Sender(response, request.transport, self.timings.send_timeout_s)
            started, sent, reason = time.monotonic(), 0, "client gone"
            try:
                await sender.send(retry_frame(self.timings.retry_ms))
                after = 0
                if resume_after is not None:
                    after = resume_after.position
                    sent += await self._catch_up(sender, subscription, after)
                sent += await self._follow(sender, subscription, caller, request, after)
            except EndedError as ended:
                reason = ended.reason
            finally:
                logger.info(
                    "event stream ended",
                    extra={
                        "reason": reason,
                        "events_sent": sent,
                        "duration_s": round(time.monotonic() - started, 3),
                        "caller": account,
                        "api_key_id": caller.api_key_id,
                    },
                )
            await sender.finish()

    async def _catch_up(self, sender: _Sender, subscription: Subscription, after: int) -> int:
        """The caller's events logged after ``after`` up to where the subscription took over."""
        sent = 0
        while after < subscription.position:
            events = await self.log.after(
                after,
                user_id=subscription.user_id,
                event_type=subscription.event_type,
                limit=READ_BATCH,
            )
            events = [event for event in events if event.position <= subscription.position]
            for event in events:
                sent += await sender.event(event)
            if len(events) < READ_BATCH:
                return sent
            after = events[-1].position
        return sent

    async def _follow(
        self,
        sender: _Sender,
        subscription: Subscription,
        caller: Principal,
        request: Request,
        after: int,
    ) -> int:
        """The live events after position ``after``, heartbeats between them, until a reason
        to end comes. A feed may stand behind the event resumed from (another replica logged
        it, and this one has not read that far yet): what it offers up to there was sent."""
        sent = 0
        next_check = time.monotonic() + self.timings.recheck_s
        while True:
            await subscription.wait(self._wait_s(caller))
            if subscription.ended is not None:
                raise EndedError(subscription.ended)
            if caller.expires_at is not None and self.clock() >= caller.expires_at:
                raise EndedError("token expired")
            if time.monotonic() >= next_check:
                await self._recheck(caller, request)
                next_check = time.monotonic() + self.timings.recheck_s
            events = [event for event in subscription.take() if event.position > after]
            for event in events:
                sent += await sender.event(event)
            if not events:
                await sender.send(comment_frame(HEARTBEAT))

    def _wait_s(self, caller: Principal) -> float:
        """Until the next heartbeat, or the token's expiry if sooner."""
        wait = self.timings.heartbeat_s
        if caller.expires_at is not None:
            wait = min(wait, max(caller.expires_at - self.clock(), 0.0))
        return wait

    async def _recheck(self, caller: Principal, request: Request) -> None:
        """End the stream unless users-service still confirms the caller as they were. Its
        silence (503) is no answer: the stream goes on, and is asked again."""
        authorization = request.headers.get("authorization", "")
        try:
            if caller.is_api_key:
                now = await self.standing.resolve_api_key(bearer_token(authorization) or "")
            else:
                now = await self.standing.confirm(caller, authorization)
        except (UnauthenticatedError, ForbiddenError) as refusal:
            raise EndedError(f"caller refused: {refusal.code}") from None
        except ApiError:
            return
        if now.role != caller.role or not now.allows(Scope.EVENTS_READ):
            raise EndedError("caller's role or scopes changed")


class _Sender:
    """Writes frames, each within the send timeout: a client that does not read is dropped."""

    def __init__(self, response: HTTPResponse, transport: Any, timeout_s: float) -> None:
        self.response, self.transport, self.timeout_s = response, transport, timeout_s
        self.stalled = False  # a write timed out: the connection was dropped

    async def send(self, frame: bytes) -> None:
        try:
            await asyncio.wait_for(self.response.send(frame), self.timeout_s)
        except TimeoutError:
            self._drop()
            raise EndedError("client too slow") from None

    async def finish(self) -> None:
        """End the response cleanly (the last chunk), within the send timeout too."""
        if self.stalled:
            return
        try:
            await asyncio.wait_for(self.response.eof(), self.timeout_s)
        except TimeoutError:
            self._drop()

    def _drop(self) -> None:
        """Its buffers are full: a clean end would wait on them, so the connection goes."""
        self.stalled = True
        self.transport.abort()

    async def event(self, event: LoggedEvent) -> int:
        """Send ``event``; 1, or 0 for one that cannot be framed (never from the platform's
        own publishers, whose ids and types are printable)."""
        try:
            frame = event_frame(event.event_id, event.type, _one_line(event.payload))
        except UnframeableError as error:
            logger.warning(
                "event not streamed", extra={"event_id": event.event_id, "error": str(error)}
            )
            return 0
        await self.send(frame)
        return 1


def _one_line(payload: str) -> str:
    """The document on one line: the stored JSON as it is, unless it spans lines."""
    if "\n" not in payload and "\r" not in payload:
        return payload
    return orjson.dumps(orjson.loads(payload)).decode()
