"""Streamed answers (``GET /api/events/stream``, Server-Sent Events) through a gateway, over real
sockets, from a stand-in that sends each frame when the test says (stream_stand_in): each frame
reaches the client as it is sent, the request reaches the upstream as any other, errors pass
through whole, and every end (the upstream's, the client's, the idle timeout, a break) ends
both sides, on asyncio's loop and on uvloop (conftest). The end a stopping gateway gives its
streams: ../test_streaming_shutdown.py."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from api_testkit.tokens import TestSigner

from ..conftest import GatewayClient, StartGateway
from ..stand_ins import refused_url
from ..stream_stand_in import (
    STREAM_PATH,
    error_response,
    frame,
    read_rest,
    read_until,
    stream_upstream,
)

ACCESS_LOGGER = "api_shared.logging.access"


def _auth(signer: TestSigner, subject: str = "user-1") -> dict[str, str]:
    return {"Authorization": f"Bearer {signer.token(subject)}"}


def _stream_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        record.__dict__
        for record in caplog.records
        if record.name == ACCESS_LOGGER and record.__dict__["path"] == STREAM_PATH
    ]


async def _open_streams(gw: GatewayClient) -> str:
    metrics = (await gw.admin_get("/metrics")).text
    (line,) = [line for line in metrics.splitlines() if line.startswith("gateway_open_streams ")]
    return line.split()[1]


async def test_each_frame_reaches_the_client_while_the_upstream_response_is_still_open(
    start_gateway: StartGateway, signer: TestSigner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url]) as gw,
        gw.stream("GET", STREAM_PATH, headers=_auth(signer) | {"X-Request-ID": "r-7"}) as response,
    ):
        call = await upstream.next_call()
        chunks = response.aiter_raw()
        call.send(frame("e-1"))
        first = await read_until(chunks)  # the upstream has not ended: nothing was buffered
        open_while_streaming = await _open_streams(gw)
        call.send(b": heartbeat\n\n")
        heartbeat = await read_until(chunks)
        call.send(frame("e-2"))
        second = await read_until(chunks)
        call.end()
        rest = await read_rest(chunks)  # the last chunk came: no error
        assert not call.gone.is_set()  # the upstream ended it, the gateway did not cut it
        open_after = await _open_streams(gw)

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-request-id"] == "r-7"
    assert response.headers["ratelimit-policy"].startswith('"default"')
    assert "transfer-encoding" in response.headers  # chunked, as it came
    assert (first, heartbeat, second, rest) == (frame("e-1"), b": heartbeat\n\n", frame("e-2"), b"")
    assert (open_while_streaming, open_after) == ("1.0", "0.0")
    (line,) = _stream_lines(caplog)
    assert line["status"] == 200
    assert line["streamEnd"] == "upstream ended"
    assert line["responseBytes"] == len(first + heartbeat + second)
    assert line["subject"] == "user-1"
    assert line["upstream"] == "webhooks"
    assert line["requestId"] == "r-7"
    assert line["durationMs"] >= line["upstreamDurationMs"] > 0


async def test_last_event_id_and_the_type_filter_reach_the_upstream_as_sent(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url]) as gw,
        gw.stream(
            "GET",
            f"{STREAM_PATH}/?type=orders.order.shipped",
            headers={
                **_auth(signer),
                "Last-Event-ID": "5b0e0000-0000-4000-8000-0000000000aa",
                "Accept": "text/event-stream",
                "Accept-Encoding": "identity",
                "User-Agent": "sse-client/1",
                "Connection": "keep-alive, X-Hop",
                "X-Hop": "not forwarded",
            },
        ) as response,
    ):
        call = await upstream.next_call()
        call.end()
        await read_rest(response.aiter_raw())

    assert response.status_code == 200
    assert call.target == f"{STREAM_PATH}/?type=orders.order.shipped"
    headers = call.headers
    assert headers["last-event-id"] == "5b0e0000-0000-4000-8000-0000000000aa"
    assert headers["accept"] == "text/event-stream"
    assert headers["authorization"].startswith("Bearer ")
    assert headers["x-request-id"]
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert "x-hop" not in headers
    # The client's own, not the gateway's client's.
    assert headers["accept-encoding"] == "identity"
    assert headers["user-agent"] == "sse-client/1"


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "UNAUTHENTICATED"), (403, "FORBIDDEN"), (429, "RATE_LIMITED"), (503, "UNAVAILABLE")],
)
async def test_an_upstream_refusal_passes_through_whole(
    start_gateway: StartGateway, signer: TestSigner, status: int, code: str
) -> None:
    answer = error_response(status, code, ("Retry-After", "3"))
    async with (
        stream_upstream(lambda call: answer) as upstream,
        start_gateway(webhooks_service_urls=[upstream.url]) as gw,
    ):
        response = await gw.get(STREAM_PATH, headers=_auth(signer))
        open_after = await _open_streams(gw)

    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": {"code": code, "message": f"{code} from upstream"}}
    assert response.headers["retry-after"] == "3"
    assert "ratelimit" in response.headers
    assert open_after == "0.0"


async def test_without_a_credential_the_stream_is_401_and_the_upstream_never_asked(
    start_gateway: StartGateway,
) -> None:
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url]) as gw,
    ):
        response = await gw.get(STREAM_PATH)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert upstream.calls.empty()


async def test_a_client_that_goes_closes_the_upstream_connection(
    start_gateway: StartGateway, signer: TestSigner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url]) as gw,
    ):
        async with gw.stream("GET", STREAM_PATH, headers=_auth(signer)) as response:
            call = await upstream.next_call()
            call.send(frame("e-1"))
            await read_until(response.aiter_raw())
        # The client closed its connection (httpx does, for a body not read to its end).
        await call.closed_by_gateway()
        open_after = await _open_streams(gw)

    assert call.gone.is_set()
    assert open_after == "0.0"
    (line,) = _stream_lines(caplog)
    assert line["streamEnd"] == "client gone"


async def test_beyond_the_cap_a_stream_is_503_with_retry_after(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url], max_streams=1) as gw,
        gw.stream("GET", STREAM_PATH, headers=_auth(signer)) as held,
    ):
        call = await upstream.next_call()
        chunks = held.aiter_raw()  # kept: a reader collected as garbage closes its stream
        call.send(frame("e-1"))
        await read_until(chunks)
        refused = await gw.get(STREAM_PATH, headers=_auth(signer, "user-2"))
        open_at_the_cap = await _open_streams(gw)
        call.end()

    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "UNAVAILABLE"
    assert refused.headers["retry-after"] == "1"
    assert open_at_the_cap == "1.0"
    assert upstream.calls.empty()  # the refused stream never reached it


async def test_an_idle_stream_ends_cleanly_after_the_idle_timeout(
    start_gateway: StartGateway, signer: TestSigner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url], stream_idle_timeout_s=0.3) as gw,
        gw.stream("GET", STREAM_PATH, headers=_auth(signer)) as response,
    ):
        call = await upstream.next_call()
        call.send(frame("e-1"))  # then nothing, not even a heartbeat
        received = await read_rest(response.aiter_raw())  # ends cleanly: no error
        await call.closed_by_gateway()

    assert received == frame("e-1")
    (line,) = _stream_lines(caplog)
    assert line["streamEnd"] == "idle timeout"


async def test_an_upstream_that_breaks_off_its_stream_breaks_the_clients_off_too(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[upstream.url]) as gw,
        gw.stream("GET", STREAM_PATH, headers=_auth(signer)) as response,
    ):
        call = await upstream.next_call()
        chunks = response.aiter_raw()
        call.send(frame("e-1"))
        await read_until(chunks)
        call.break_off()
        # No last chunk: the client must not take a truncated stream for a whole one.
        with pytest.raises(httpx.RemoteProtocolError):
            await read_rest(chunks)


async def test_a_replica_refusing_connections_leaves_the_stream_to_the_next(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with (
        stream_upstream() as upstream,
        start_gateway(webhooks_service_urls=[refused_url(), upstream.url]) as gw,
    ):
        answered = []
        for _ in range(2):  # whichever replica's turn it is, the stream is served
            async with gw.stream("GET", STREAM_PATH, headers=_auth(signer)) as response:
                call = await upstream.next_call()
                call.send(frame("e-1"))
                call.end()
                answered.append((response.status_code, await read_rest(response.aiter_raw())))
        metrics = (await gw.admin_get("/metrics")).text

    assert answered == [(200, frame("e-1"))] * 2
    assert 'gateway_upstream_errors_total{kind="connect",upstream="webhooks"}' in metrics


async def test_with_every_replica_refusing_the_stream_is_503(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with start_gateway(webhooks_service_urls=[refused_url(), refused_url()]) as gw:
        response = await gw.get(STREAM_PATH, headers=_auth(signer))
        open_after = await _open_streams(gw)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "UNAVAILABLE"
    assert "retry-after" in response.headers
    assert open_after == "0.0"


async def test_other_methods_and_the_event_history_are_not_streamed(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    answer = error_response(405, "METHOD_NOT_ALLOWED")
    async with (
        stream_upstream(lambda call: answer) as upstream,
        start_gateway(webhooks_service_urls=[upstream.url], max_streams=1) as gw,
    ):
        posted = await gw.post(STREAM_PATH, headers=_auth(signer))
        call = await upstream.next_call()

    assert posted.status_code == 405
    assert posted.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert call.head.startswith(b"POST /api/events/stream ")
