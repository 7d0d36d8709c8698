"""What a service publishes: each event type once, with the pydantic model of its ``data``.

A service's ``EventCatalog`` is the one list its outbox records from (``Outbox.record``
refuses a type the catalog lacks) and its AsyncAPI document is built from
(``api_shared.events.asyncapi``): an event the service emits cannot be missing from the
document, nor its ``data`` differ from the model the document shows.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass

from nats.js.api import StreamConfig
from pydantic import BaseModel

from api_shared.events.envelope import nats_subject


class UndeclaredEventError(ValueError):
    """An event type its service's catalog does not declare (so no document describes it)."""


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One event type: ``orders.order.created``, what ``data`` holds, when it happens."""

    type: str
    data: builtins.type[BaseModel]  # ``type`` is the field above, in this class's body
    summary: str

    @property
    def nats_subject(self) -> str:
        return nats_subject(self.type)


@dataclass(frozen=True, slots=True)
class EventCatalog:
    """The events of one service (``source``: ``/orders-service``), on its ``stream``."""

    source: str
    stream: StreamConfig
    events: Sequence[EventSpec]

    def __post_init__(self) -> None:
        types = [spec.type for spec in self.events]
        if len(set(types)) != len(types):
            raise ValueError(f"an event type is declared twice: {types}")
        for spec in self.events:
            spec.nats_subject  # noqa: B018 (refuses a type not shaped <service>.<resource>.<change>)

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(spec.type for spec in self.events)

    def check(self, event_type: str) -> None:
        """Raise ``UndeclaredEventError`` unless ``event_type`` is declared."""
        if event_type not in self.types:
            raise UndeclaredEventError(
                f"{event_type} is not among {self.source}'s events ({', '.join(self.types)})"
            )
