"""What the gateway tells an operator: metrics by route and upstream, access lines, CORS Vary."""

from __future__ import annotations

import logging

import pytest

from api_testkit.tokens import TestSigner

from .conftest import StartGateway
from .stand_ins import echo_upstream, refused_url

ORIGIN = "https://app.example.com"


async def test_metrics_label_proxied_requests_by_route_template_and_upstream(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    auth = {"Authorization": f"Bearer {signer.token('user-1')}"}
    async with (
        echo_upstream("orders") as orders,
        start_gateway(orders_service_urls=[orders], books_service_urls=[refused_url()]) as gw,
    ):
        await gw.get("/orders/o-1", headers=auth)
        await gw.get("/orders/o-2", headers=auth)
        await gw.post("/graphql", json={"query": "{ books { id } }"})
        body = (await gw.admin_get("/metrics")).text

    orders_route = 'route="/orders{/path}"'
    assert (
        f'http_requests_total{{method="GET",{orders_route},status="200",upstream="orders"}} 2.0'
        in (body)
    )
    assert (
        'http_requests_total{method="POST",route="/graphql",status="503",upstream="books"} 1.0'
        in (body)
    )
    assert (
        f'gateway_upstream_duration_seconds_count{{{orders_route},upstream="orders"}} 2.0' in body
    )
    assert 'gateway_upstream_errors_total{kind="connect",upstream="books"} 1.0' in body
    assert "process_resident_memory_bytes" in body


async def test_a_header_the_gateway_refuses_is_not_counted_as_an_upstream_error(
    start_gateway: StartGateway,
) -> None:
    async with echo_upstream("books") as books, start_gateway(books_service_urls=[books]) as gw:
        refused = await gw.post("/graphql", headers={"X-Bad": "a\x01b"}, json={})
        body = (await gw.admin_get("/metrics")).text

    assert refused.status_code == 400
    assert "gateway_upstream_errors_total{" not in body


async def test_the_access_line_names_client_subject_upstream_and_size(
    start_gateway: StartGateway, signer: TestSigner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="api_shared.logging.access")
    token = signer.token("user-7", email="ada@example.com")
    async with echo_upstream("orders") as orders, start_gateway(orders_service_urls=[orders]) as gw:
        response = await gw.get("/orders", headers={"Authorization": f"Bearer {token}"})

    (line,) = [
        r
        for r in caplog.records
        if r.name == "api_shared.logging.access" and r.__dict__["path"] == "/orders"
    ]
    fields = line.__dict__
    assert fields["client"] == "127.0.0.1"
    assert fields["subject"] == "user-7"
    assert "ada@example.com" not in str(fields)
    assert fields["upstream"] == "orders"
    assert 0 < fields["upstreamDurationMs"] <= fields["durationMs"]
    assert fields["responseBytes"] == len(response.content)


async def test_a_clients_trace_context_stops_at_the_gateway_and_its_request_id_goes_on(
    start_gateway: StartGateway,
) -> None:
    sent = {
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "tracestate": "vendor=x",
        "baggage": "user=someone-else",
        "X-Request-ID": "req-9",
    }
    async with echo_upstream("books") as books, start_gateway(books_service_urls=[books]) as gw:
        forwarded = (await gw.post("/graphql", headers=sent, json={})).json()["headers"]

    assert not {"traceparent", "tracestate", "baggage"} & set(forwarded)
    assert forwarded["x-request-id"] == "req-9"


async def test_cors_vary_origin_joins_the_upstreams_vary_instead_of_replacing_it(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("users") as users,
        start_gateway(users_service_urls=[users], cors_origins=[ORIGIN]) as gw,
    ):
        granted = await gw.get("/api/auth/negotiated", headers={"Origin": ORIGIN})
        no_origin = await gw.get("/api/auth/negotiated")
        plain = await gw.get("/api/auth/other", headers={"Origin": "https://evil.test"})

    assert granted.headers["access-control-allow-origin"] == ORIGIN
    assert granted.headers.get_list("vary") == ["Accept, Origin"]
    # Granted or not, the answer depends on Origin: a shared cache must know it.
    assert no_origin.headers.get_list("vary") == ["Accept, Origin"]
    assert plain.headers.get_list("vary") == ["Origin"]
    assert "access-control-allow-origin" not in plain.headers
