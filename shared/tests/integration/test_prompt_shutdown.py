"""Once a service is stopping, its answers close their connections (api_shared.shutdown)."""

from __future__ import annotations

import httpx

from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_testkit.in_process import running_server


async def test_once_the_server_is_stopping_every_answer_closes_its_connection() -> None:
    app = create_service_app("prompt-shutdown", ServiceSettings(environment="development"))
    async with (
        running_server(app) as server,
        httpx.AsyncClient(base_url=server.url) as client,
    ):
        serving = await client.get("/health")
        ready = await client.get("/ready")
        await server.before_stop()  # what SIGTERM sets off first
        stopping = await client.get("/health")
        draining = await client.get("/ready")

    assert serving.headers["connection"] == "keep-alive"
    assert stopping.status_code == 200  # the request in progress is still answered
    assert stopping.headers["connection"] == "close"
    assert ready.status_code == 200
    assert draining.status_code == 503  # a probe sees the process leave before it is gone
    assert draining.json()["status"] == "stopping"
