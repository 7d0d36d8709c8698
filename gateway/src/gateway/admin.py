"""The gateway's admin port: ``/health``, ``/ready``, ``/metrics`` (and ``/status``, the
upstreams' state, from gateway.routes), off the public port.

Status names the upstreams and metrics describe the traffic: neither is for the public.
The public port keeps ``/health`` alone (a liveness probe that says nothing); ``/ready`` and
``/metrics`` there are 404 like any unknown path. The admin app serves the very handlers the
shared service frame installed on the public app, so both ports read one set of readiness
checks and one metrics registry. It runs in the public server's event loop, started and
stopped with it (api_shared.loop_server), on ``HOST:GATEWAY_ADMIN_PORT``.
"""

from __future__ import annotations

from sanic import Request, Sanic

from api_shared.error_handler import ContractRequest, install_error_handler
from api_shared.errors import NotFoundError
from api_shared.loop_server import LoopServer, start_in_loop
from api_shared.representation import dumps
from api_shared.types import App
from gateway.context import Context

ADMIN_ROUTES = ("health", "version", "ready", "metrics")
ADMIN_ONLY_ROUTES = frozenset({"ready", "metrics"})


def install_admin_port(public: App, context: Context) -> App:
    """Serve the admin routes on HOST:GATEWAY_ADMIN_PORT alongside ``public``; refuse them on
    ``public``. The admin app reads the same ``context`` (``context_of`` works there too)."""
    host, port = context.settings.host, context.settings.admin_port
    admin: App = Sanic(
        f"{public.name}-admin",
        dumps=dumps,
        configure_logging=False,
        request_class=ContractRequest,
    )
    admin.config.ACCESS_LOG = False
    admin.config.MOTD = False
    admin.config.AUTO_EXTEND = False
    # TouchUp rewrites methods of Sanic's shared classes once per process: the public app has.
    admin.config.TOUCHUP = False
    install_error_handler(admin)
    admin.ctx.context = context  # its lifetime is the public app's (install_context)
    handlers = {route.name.rpartition(".")[2]: route.handler for route in public.router.routes}
    for name in ADMIN_ROUTES:
        admin.add_route(handlers[name], f"/{name}", methods=["GET"], name=name)

    def refuse_admin_routes(request: Request) -> None:
        raise NotFoundError("No route matches this path.")

    # On these routes only: a middleware on every route would cost each proxied request.
    public.register_named_middleware(
        refuse_admin_routes,
        sorted(f"{public.name}.{name}" for name in ADMIN_ONLY_ROUTES),
        "request",
        priority=100,
    )

    servers: list[LoopServer] = []

    @public.after_server_start
    async def start_admin(app: App) -> None:
        servers.append(await start_in_loop(admin, host, port))

    @public.before_server_stop
    async def stop_admin(app: App) -> None:
        while servers:
            await servers.pop().close()

    return admin
