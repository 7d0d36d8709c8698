"""/ready and /metrics are served on the admin port only; the public port keeps /health."""

from __future__ import annotations

from .conftest import StartGateway
from .stand_ins import echo_upstream


async def test_the_public_port_answers_health_and_refuses_ready_and_metrics(
    start_gateway: StartGateway,
) -> None:
    async with echo_upstream("users") as users, start_gateway(users_service_urls=[users]) as gw:
        health = await gw.get("/health")
        hidden = [await gw.get(path) for path in ("/ready", "/metrics", "/metrics/")]

    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    for response in hidden:
        assert response.status_code == 404
        assert response.json() == {
            "error": {"code": "NOT_FOUND", "message": "No route matches this path."}
        }
        assert "gateway_" not in response.text


async def test_the_admin_port_serves_health_readiness_and_the_public_ports_metrics(
    start_gateway: StartGateway,
) -> None:
    async with echo_upstream("users") as users, start_gateway(users_service_urls=[users]) as gw:
        await gw.get("/.well-known/jwks.json")
        health = await gw.admin_get("/health")
        ready = await gw.admin_get("/ready")
        metrics = await gw.admin_get("/metrics")
        unknown = await gw.admin_get("/api/users")

    assert health.json() == {"status": "ok"}
    assert ready.status_code == 200  # the gateway's own readiness, whatever its upstreams'
    assert ready.json()["status"] == "ok"
    assert 'route="/.well-known/jwks.json",status="200"' in metrics.text  # the public request
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "NOT_FOUND"  # nothing is proxied here
