"""The gateway forwards requests faithfully and maps upstream failures to the contract."""

from __future__ import annotations

import asyncio
import gzip
import time

from api_testkit.raw_http import raw_request
from api_testkit.tokens import TestSigner

from .conftest import StartGateway
from .stand_ins import echo_upstream, garbage, hang, hang_up, raw_upstream, refused_url


async def test_each_route_reaches_its_upstream_with_path_query_and_body(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    token = signer.token("user-1")
    async with (
        echo_upstream("users") as users,
        echo_upstream("orders") as orders,
        echo_upstream("books") as books,
        start_gateway(
            users_service_urls=[users], orders_service_urls=[orders], books_service_urls=[books]
        ) as gateway,
    ):
        auth = {"Authorization": f"Bearer {token}"}
        cases = [
            ("GET", "/api/users?limit=5&sort=-name", "users"),
            ("POST", "/api/auth/token", "users"),
            ("GET", "/.well-known/jwks.json", "users"),
            ("PATCH", "/orders/abc%2Fdef?x=1", "orders"),
            ("GET", "/users/u1/orders", "orders"),
            ("POST", "/graphql", "books"),
        ]
        for method, target, upstream in cases:
            response = await gateway.request(method, target, headers=auth, content=b'{"a":1}')
            echoed = response.json()
            assert response.status_code == 200, target
            assert echoed["upstream"] == upstream
            assert echoed["method"] == method
            # The target reaches the upstream as the client encoded it.
            assert echoed["target"] == target
            assert echoed["headers"]["authorization"] == auth["Authorization"]
        assert echoed["body"] == '{"a":1}'


async def test_hop_by_hop_headers_are_dropped_and_forwarding_headers_set(
    start_gateway: StartGateway,
) -> None:
    async with echo_upstream("users") as users, start_gateway(users_service_urls=[users]) as gw:
        response = await gw.post(
            "/api/users",
            json={},
            headers={
                "Connection": "keep-alive, X-Secret-Hop",
                "X-Secret-Hop": "drop me",
                "Keep-Alive": "timeout=5",
                "X-Forwarded-For": "6.6.6.6",
                "X-Request-ID": "req-77",
                "X-Custom": "kept",
            },
        )

    headers = response.json()["headers"]
    assert "x-secret-hop" not in headers
    assert "keep-alive" not in headers
    assert headers["x-custom"] == "kept"
    # Nobody is a trusted proxy by default: a client-written X-Forwarded-For is replaced.
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers["x-forwarded-proto"] == "http"
    assert headers["x-forwarded-host"].startswith("127.0.0.1:")
    assert headers["x-request-id"] == "req-77"
    assert response.headers["x-request-id"] == "req-77"


async def test_the_upstreams_answer_loses_its_hop_by_hop_headers_and_keeps_the_rest_as_sent(
    start_gateway: StartGateway,
) -> None:
    compressed = gzip.compress(b'{"keys":[]}')

    async def answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: secret\r\n"
            b"Keep-Alive: timeout=5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
            b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%b"
            % (len(compressed), compressed)
        )
        await writer.drain()
        writer.close()

    async with (
        raw_upstream(answer_then_close) as users,
        start_gateway(users_service_urls=[users]) as gw,
    ):
        first = await gw.get("/.well-known/jwks.json")
        # The upstream closed after its answer, as it said: the next one goes on a new connection.
        async with gw.stream("GET", "/.well-known/jwks.json") as second:
            raw = b"".join([chunk async for chunk in second.aiter_raw()])

    assert first.status_code == second.status_code == 200
    assert first.headers.get_list("set-cookie") == ["a=1", "b=2"]
    assert "x-hop" not in first.headers
    assert "keep-alive" not in first.headers
    assert first.headers["content-encoding"] == "gzip"
    assert raw == compressed  # passed through as the upstream sent it


async def test_a_host_that_cannot_be_forwarded_as_x_forwarded_host_is_400(
    start_gateway: StartGateway,
) -> None:
    async with echo_upstream("users") as users, start_gateway(users_service_urls=[users]) as gw:
        host = b"Host: api\xe9.example\r\n"
        request = b"GET /.well-known/jwks.json HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n"
        refused = await raw_request(str(gw.base_url), request)
        fine = await gw.get("/.well-known/jwks.json", headers={"Host": "api.example"})

    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "VALIDATION_FAILED"
    assert fine.json()["headers"]["x-forwarded-host"] == "api.example"


async def test_an_upstream_error_passes_through_unchanged(start_gateway: StartGateway) -> None:
    async with echo_upstream("users") as users, start_gateway(users_service_urls=[users]) as gw:
        response = await gw.post("/api/auth/teapot")

    assert response.status_code == 418
    assert response.headers["x-upstream"] == "kept"
    assert response.json()["error"]["message"] == "short and stout"


async def test_a_refused_connection_is_503_with_retry_after(start_gateway: StartGateway) -> None:
    async with start_gateway() as gw:
        response = await gw.post("/api/users", json={"name": "x"})

    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["code"] == "UNAVAILABLE"


async def test_an_upstream_that_does_not_answer_in_time_is_504(start_gateway: StartGateway) -> None:
    async with (
        raw_upstream(hang) as slow,
        start_gateway(books_service_urls=[slow], upstream_timeout_s=0.5) as gw,
    ):
        started = time.monotonic()
        response = await gw.post("/graphql", json={"query": "{ books { title } }"})
        elapsed = time.monotonic() - started

    assert response.status_code == 504
    assert response.json()["error"]["code"] == "UPSTREAM_TIMEOUT"
    assert elapsed < 5  # bounded by the configured timeout, not the upstream


async def test_an_upstream_speaking_garbage_is_502(start_gateway: StartGateway) -> None:
    async with raw_upstream(garbage) as broken, start_gateway(books_service_urls=[broken]) as gw:
        response = await gw.post("/graphql", json={"query": "{ books { title } }"})

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "BAD_GATEWAY"


async def test_a_failing_upstream_does_not_slow_a_healthy_one(start_gateway: StartGateway) -> None:
    async with (
        raw_upstream(hang) as slow,
        echo_upstream("users") as users,
        start_gateway(
            books_service_urls=[slow], users_service_urls=[users], upstream_timeout_s=3
        ) as gw,
    ):
        stuck = asyncio.ensure_future(gw.post("/graphql", json={"query": "{ books { id } }"}))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        healthy = await gw.get("/.well-known/jwks.json")
        healthy_elapsed = time.monotonic() - started
        assert (await stuck).status_code == 504

    assert healthy.status_code == 200
    assert healthy_elapsed < 1.0


async def test_a_get_is_retried_on_the_next_replica_when_one_refuses(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("users") as users,
        start_gateway(users_service_urls=[refused_url(), users]) as gw,
    ):
        statuses = [(await gw.get("/.well-known/jwks.json")).status_code for _ in range(4)]
        metrics = (await gw.admin_get("/metrics")).text

    assert statuses == [200, 200, 200, 200]
    assert 'gateway_upstream_errors_total{kind="connect",upstream="users"}' in metrics


async def test_a_post_is_never_retried_but_the_down_replica_is_then_skipped(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("users") as users,
        start_gateway(users_service_urls=[refused_url(), users]) as gw,
    ):
        first = await gw.post("/api/users", json={})
        second = await gw.post("/api/users", json={})
        third = await gw.post("/api/users", json={})

    assert first.status_code == 503  # the POST went to the refusing replica: not resent
    assert second.status_code == third.status_code == 200


async def test_a_body_over_the_limit_is_413_and_never_reaches_the_upstream(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("users") as users,
        start_gateway(users_service_urls=[users], max_body_bytes=1024) as gw,
    ):
        too_big = await gw.post("/api/users", content=b"x" * 2048)
        fits = await gw.post("/api/users", content=b"x" * 512)

    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert fits.status_code == 200


async def test_protected_routes_need_a_valid_token_and_public_ones_do_not(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with (
        echo_upstream("orders") as orders,
        echo_upstream("users") as users,
        start_gateway(orders_service_urls=[orders], users_service_urls=[users]) as gw,
    ):
        missing = await gw.get("/orders")
        forged = await gw.get("/orders", headers={"Authorization": "Bearer abc.def.ghi"})
        foreign = await gw.get(
            "/orders", headers={"Authorization": f"Bearer {TestSigner().token('u')}"}
        )
        valid = await gw.get("/orders", headers={"Authorization": f"Bearer {signer.token('u')}"})
        sign_up = await gw.post("/api/users", json={"name": "x"})

    assert missing.status_code == forged.status_code == foreign.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert forged.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert valid.status_code == 200
    assert sign_up.status_code == 200


async def test_unknown_paths_are_404_and_root_too(start_gateway: StartGateway) -> None:
    async with start_gateway() as gw:
        for path in ("/", "/nope", "/api/usersx"):
            response = await gw.get(path)
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_ready_ignores_the_upstreams_and_status_reports_each_replica(
    start_gateway: StartGateway,
) -> None:
    down = refused_url()
    async with (
        echo_upstream("users") as users,
        start_gateway(users_service_urls=[users, down]) as gw,
    ):
        ready = await gw.admin_get("/ready")
        status = await gw.admin_get("/status")
        metrics = (await gw.admin_get("/metrics")).text
        public = await gw.get("/status")

    assert ready.status_code == 200  # orders and books are down: the gateway still serves
    assert ready.json() == {"status": "ok", "checks": {}}
    body = status.json()
    assert status.status_code == 200
    assert body["status"] == "degraded"
    assert body["upstreams"]["users"] == {
        "status": "ok",
        "replicas": {users: "ok", down: "unavailable: ClientConnectorError"},
    }
    assert body["upstreams"]["orders"]["status"] == "unavailable"
    assert body["upstreams"]["books"]["status"] == "unavailable"
    assert "rateLimitStore" not in body  # no Redis configured
    assert 'gateway_upstream_ready{upstream="users"} 1.0' in metrics
    assert 'gateway_upstream_ready{upstream="orders"} 0.0' in metrics
    assert public.status_code == 404  # status names the upstreams: admin port only


async def test_an_idempotent_request_cut_by_a_replica_is_sent_to_the_next_one(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    headers = {"Authorization": f"Bearer {signer.token('user-1')}"}
    async with (
        raw_upstream(hang_up) as leaving,
        echo_upstream("orders") as staying,
        start_gateway(orders_service_urls=[leaving, staying]) as gw,
    ):
        reads = [await gw.get("/orders", headers=headers) for _ in range(4)]
        writes = [await gw.post("/orders", json={}, headers=headers) for _ in range(4)]

    assert [r.status_code for r in reads] == [200] * 4
    # A creation may have been acted on before the cut: not sent twice, refused instead.
    assert sorted(r.status_code for r in writes) == [200, 200, 503, 503]
    refused = next(r for r in writes if r.status_code == 503)
    assert refused.json()["error"]["code"] == "UNAVAILABLE"
    assert refused.headers["retry-after"]


async def test_metrics_count_requests_by_route_template(start_gateway: StartGateway) -> None:
    async with start_gateway() as gw:
        await gw.get("/nope")
        body = (await gw.admin_get("/metrics")).text

    assert 'http_requests_total{method="GET",route="unmatched",status="404",upstream=""}' in body


async def test_openapi_merges_the_routed_paths_of_each_service(start_gateway: StartGateway) -> None:
    async with echo_upstream("users") as users, start_gateway(users_service_urls=[users]) as gw:
        document = (await gw.get("/openapi.json")).json()
        ui = await gw.get("/docs")

    assert document["info"]["title"] == "API platform"
    assert "bearerAuth" in document["components"]["securitySchemes"]
    assert "Error" in document["components"]["schemas"]
    assert "/health" in document["paths"]
    assert "/ready" not in document["paths"]  # served on the admin port only
    assert ui.status_code == 200
    assert "/openapi.json" in ui.text
