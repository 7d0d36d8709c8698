"""A service's context resources live exactly as long as its server, inside the database's life."""

from __future__ import annotations

from dataclasses import dataclass, field

from sanic import Sanic

from api_shared.context import Resource, install_context
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

    async def open_database(app: Sanic) -> None:  # what Tortoise's listener does, at priority 0
        journal.append("open database")

    async def close_database(app: Sanic) -> None:
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
