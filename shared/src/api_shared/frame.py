"""What the service frame keeps for one app, typed: its settings, metrics registry,
readiness checks and whether the server is stopping.

``create_service_app`` makes one ``Frame`` per app; the frame's steps and installers read
it through ``frame_of(app)``, never through loose ``app.ctx`` attributes. A service's own
parts live in its context (``api_shared.context``), not here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

from api_shared.types import App

if TYPE_CHECKING:
    from api_shared.settings import ServiceSettings

ReadinessCheck = Callable[[], Awaitable[None]]
"""Raises (or times out) when the dependency it checks is not ready (``/ready``)."""


@dataclass(slots=True, eq=False)
class Frame:
    """The frame's parts of one app; all fixed when it is made but ``stopping``."""

    settings: ServiceSettings
    metrics: CollectorRegistry  # served at /metrics (api_shared.metrics)
    readiness: dict[str, ReadinessCheck] = field(default_factory=dict)  # run by /ready
    stopping: bool = False  # set once the server begins to stop (api_shared.shutdown)

    def add_readiness_check(self, name: str, check: ReadinessCheck) -> None:
        """Make ``/ready`` depend on ``check``; a name is taken once (the body names it)."""
        if name in self.readiness:
            raise ValueError(f"a readiness check named {name!r} is already installed")
        self.readiness[name] = check

    def add_collectors(self, collectors: Sequence[Collector]) -> None:
        """Report ``collectors`` at ``/metrics`` (a name registered twice is refused)."""
        for collector in collectors:
            self.metrics.register(collector)


def install_frame(app: App, frame: Frame) -> None:
    """Give ``app`` its frame (``create_service_app`` does, once)."""
    app.ctx.frame = frame


def frame_of(app: App) -> Frame:
    """The frame of ``app`` (one made by ``create_service_app``)."""
    frame: Frame = app.ctx.frame
    return frame
