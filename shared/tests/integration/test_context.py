"""A service's context resources live exactly as long as its server, inside the database's
life, and bring their own metrics and readiness checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import httpx
from prometheus_client.registry import Collector
from sanic import Sanic

from api_shared.context import Inert, Resource, install_context
from api_shared.frame import Frame, ReadinessCheck, frame_of, install_frame
from api_shared.metrics import Reading, Readings, new_registry
from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_shared.types import App
from api_testkit.in_process import serve_in_process
from api_testkit.ports import free_port


@dataclass
class Recorded:
    """A resource that writes its start and stop into a shared journal."""

    name: str
    journal: list[str]

    async def start(self) -> None:
        self.journal.append(f"start {self.name}")

    async def stop(self) -> None:
        self.journal.append(f"stop {self.name}")


@dataclass(frozen=True)
class Context:
    resources: tuple[Resource, ...] = field(default=())


async def test_resources_start_after_the_database_opens_and_stop_in_reverse_before_it_closes() -> (
    None
):
    journal: list[str] = []
    app = Sanic("context_test", configure_logging=False)
    install_frame(app, Frame(ServiceSettings(), metrics=new_registry()))

    async def open_database(app: App) -> None:  # what Tortoise's listener does, at priority 0
        journal.append("open database")

    async def close_database(app: App) -> None:
        journal.append("close database")

    app.register_listener(open_database, "before_server_start")
    app.register_listener(close_database, "after_server_stop")
    context = Context(resources=(Recorded("http", journal), Recorded("purge", journal)))
    install_context(app, context)

    server = await app.create_server(host="127.0.0.1", port=free_port(), return_asyncio_server=True)
    assert server is not None
    await server.startup()
    await server.before_start()
    await server.after_start()
    assert app.ctx.context is context
    await server.before_stop()
    await server.close()
    await server.after_stop()

    assert journal == [
        "open database",
        "start http",
        "start purge",
        "stop purge",
        "stop http",
        "close database",
    ]


class Gauged(Inert):
    """A resource with a reading and a readiness check of its own."""

    def __init__(self) -> None:
        self.up = True

    def collectors(self) -> Sequence[Collector]:
        return (Readings([Reading("gauged_up", "1 while up.", lambda: int(self.up))]),)

    def readiness_checks(self) -> Mapping[str, ReadinessCheck]:
        return {"gauged": self.check}

    async def check(self) -> None:
        if not self.up:
            raise ConnectionError("down")


async def test_a_resource_brings_its_metrics_and_readiness_check_to_the_app() -> None:
    gauged = Gauged()
    app = create_service_app("measured_test", ServiceSettings())
    install_context(app, Context(resources=(gauged, Recorded("plain", []))))

    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        ready, metrics = await client.get("/ready"), await client.get("/metrics")
        gauged.up = False
        unready = await client.get("/ready")

    assert (ready.status_code, ready.json()["checks"]) == (200, {"gauged": "ok"})
    assert "gauged_up 1.0" in metrics.text
    assert (unready.status_code, unready.json()["checks"]) == (503, {"gauged": "unavailable"})
    assert list(frame_of(app).readiness) == ["gauged"]
