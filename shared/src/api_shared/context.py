"""A service's context: the parts its handlers work with, built once by the service's ``wire``.

Every service has the same three pieces (cosmicpython's bootstrap, in Sanic's terms):

- ``<svc>/context.py``: a frozen, typed ``Context`` and ``wire(settings, **overrides)``,
  which builds it from settings; each override replaces one part (tests pass fakes);
- ``create_app(settings=None, *, context=None)``: the frame, ``install_context`` and the
  blueprints, nothing else;
- handlers read ``context_of(request)``, typed, instead of untyped ``request.app.ctx``.

Parts that live as long as the server (HTTP sessions, thread pools, periodic jobs) are
``Resource``s, listed in the context's ``resources``: started once the database is open,
stopped in reverse order after the server has drained its requests and before the database
closes. A resource brings its own observability: when it is ``Measured`` its collectors are
reported at ``/metrics``, when it is ``Probed`` ``/ready`` runs its checks. A part that has
something to report and no lifetime of its own (counters, say) is an ``Inert`` resource.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from prometheus_client.registry import Collector

from api_shared.frame import ReadinessCheck, frame_of
from api_shared.types import App

# Sanic runs start-up listeners of higher priority first and shutdown listeners in the reverse
# order. Tortoise opens and closes its connections at priority 0: below it, resources start
# after it opened them and stop before it closes them.
PRIORITY = -5


class Resource(Protocol):
    """Something with a lifetime: opened when the server starts, closed when it stops."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@runtime_checkable
class Measured(Protocol):
    """A resource with metrics of its own: ``install_context`` registers its collectors."""

    def collectors(self) -> Sequence[Collector]: ...


@runtime_checkable
class Probed(Protocol):
    """A resource ``/ready`` depends on: ``install_context`` adds its checks, by name."""

    def readiness_checks(self) -> Mapping[str, ReadinessCheck]: ...


class Inert:
    """A base for a resource that is listed for what it measures or checks: nothing to
    start or stop."""

    async def start(self) -> None:
        """Nothing to open."""

    async def stop(self) -> None:
        """Nothing to close."""


class ServiceContext(Protocol):
    """What ``install_context`` needs of a service's context."""

    @property
    def resources(self) -> Sequence[Resource]: ...


def install_context(app: App, context: ServiceContext) -> None:
    """Put ``context`` on ``app.ctx.context``, tie its resources to the server's life, and
    report their metrics and readiness on the app's frame."""
    app.ctx.context = context
    frame = frame_of(app)
    for resource in context.resources:
        if isinstance(resource, Measured):
            frame.add_collectors(resource.collectors())
        if isinstance(resource, Probed):
            for name, check in resource.readiness_checks().items():
                frame.add_readiness_check(name, check)

    async def start_resources(app: App) -> None:
        for resource in context.resources:
            await resource.start()

    async def stop_resources(app: App) -> None:
        for resource in reversed(context.resources):
            await resource.stop()

    app.register_listener(start_resources, "before_server_start", priority=PRIORITY)
    app.register_listener(stop_resources, "after_server_stop", priority=PRIORITY)
