"""Upstream services and their replicas: round robin with passive health."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class Target:
    """One replica's base URL, and until when it is believed down."""

    url: str
    down_until: float = 0.0

    def is_up(self, now: float) -> bool:
        return now >= self.down_until


@dataclass(slots=True)
class Upstream:
    """A named service behind one or more replicas."""

    name: str
    targets: list[Target]
    down_s: float = 5.0
    _turn: itertools.count[int] = field(default_factory=itertools.count)

    @classmethod
    def of(cls, name: str, urls: Sequence[str], down_s: float) -> Upstream:
        return cls(name, [Target(url) for url in urls], down_s)

    def candidates(self) -> list[Target]:
        """Targets in the order to try them: the next in turn first, replicas believed down last.

        A replica that refused a connection is skipped for ``down_s`` seconds, so one replica
        down costs no failed requests while another is up; when all are down, all are tried.
        """
        start = next(self._turn) % len(self.targets)
        ordered = self.targets[start:] + self.targets[:start]
        now = time.monotonic()
        return [t for t in ordered if t.is_up(now)] + [t for t in ordered if not t.is_up(now)]

    def mark_down(self, target: Target) -> None:
        target.down_until = time.monotonic() + self.down_s

    def mark_up(self, target: Target) -> None:
        target.down_until = 0.0
