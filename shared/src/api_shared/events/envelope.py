"""The CloudEvents 1.0 envelope (structured JSON mode) every event travels in.

Types are ``<service>.<resource>.<change>`` (``orders.order.created``); each goes to the NATS
subject ``<service>.events.<resource>.<change>`` of its service's stream. ``sequence`` is a
CloudEvents extension attribute: 1, 2, 3… per ``subject`` (the resource's id), so a consumer
can tell the order of one resource's events and spot a gap.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

SPEC_VERSION = "1.0"
CONTENT_TYPE = "application/cloudevents+json; charset=utf-8"
DATA_CONTENT_TYPE = "application/json"
# The NATS header JetStream de-duplicates on: an event's id, so a republished event is dropped.
MESSAGE_ID_HEADER = "Nats-Msg-Id"


class MalformedEventError(ValueError):
    """A message that is not a CloudEvents document of ours."""


@dataclass(frozen=True, slots=True)
class CloudEvent:
    """One event. ``sequence`` is None until the outbox gives it its subject's next number."""

    source: str
    type: str
    subject: str
    data: Mapping[str, Any]
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    time: datetime = field(default_factory=lambda: datetime.now(UTC))
    sequence: int | None = None

    @property
    def nats_subject(self) -> str:
        return nats_subject(self.type)

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "specversion": SPEC_VERSION,
            "id": self.id,
            "source": self.source,
            "type": self.type,
            "subject": self.subject,
            "time": self.time.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "datacontenttype": DATA_CONTENT_TYPE,
            "data": dict(self.data),
        }
        if self.sequence is not None:
            document["sequence"] = self.sequence
        return document

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    def to_json_before_sequence(self) -> bytes:
        """The document up to its sequence number: with ``N`` and ``}`` appended, it is
        ``replace(self, sequence=N).to_json()`` byte for byte (``sequence`` is the last
        member), so a database can number the event and write its document in one step."""
        return orjson.dumps({**self.to_dict(), "sequence": 0})[: -len(b"0}")]

    @classmethod
    def from_json(cls, raw: bytes | str) -> CloudEvent:
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise MalformedEventError(f"not JSON: {error}") from None
        if not isinstance(document, dict) or document.get("specversion") != SPEC_VERSION:
            raise MalformedEventError("not a CloudEvents 1.0 document")
        try:
            sequence = document.get("sequence")
            return cls(
                source=_text(document, "source"),
                type=_text(document, "type"),
                subject=_text(document, "subject"),
                data=document["data"] if isinstance(document.get("data"), dict) else {},
                id=_text(document, "id"),
                time=datetime.fromisoformat(_text(document, "time")),
                sequence=int(sequence) if sequence is not None else None,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise MalformedEventError(f"bad attribute: {error}") from None


def envelope_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of ``CloudEvent.to_dict``'s document, beside it so that
    both change together. ``data`` is any object here; each event type narrows it."""
    text = {"type": "string", "minLength": 1}
    return {
        "type": "object",
        "description": "A CloudEvents 1.0 event in structured JSON mode (docs/api.md#events).",
        "required": [
            "specversion",
            "id",
            "source",
            "type",
            "subject",
            "time",
            "datacontenttype",
            "data",
        ],
        "properties": {
            "specversion": {"type": "string", "const": SPEC_VERSION},
            "id": {
                **text,
                "description": "Unique per event: the key to de-duplicate on (also sent as "
                "Nats-Msg-Id to NATS and as webhook-id to webhooks).",
            },
            "source": {**text, "format": "uri-reference", "description": "The service."},
            "type": {**text, "description": "<service>.<resource>.<change>"},
            "subject": {**text, "description": "The id of the order or user the event is of."},
            "time": {"type": "string", "format": "date-time"},
            "datacontenttype": {"type": "string", "const": DATA_CONTENT_TYPE},
            "data": {"type": "object"},
            "sequence": {
                "type": "integer",
                "minimum": 1,
                "description": "1, 2, 3… per subject, with no gap (an extension attribute).",
            },
        },
        "additionalProperties": False,
    }


def nats_subject(event_type: str) -> str:
    """``orders.order.created`` → ``orders.events.order.created``."""
    service, _, rest = event_type.partition(".")
    if not service or not rest:
        raise ValueError(f"event type {event_type!r} is not <service>.<resource>.<change>")
    return f"{service}.events.{rest}"


def _text(document: Mapping[str, Any], name: str) -> str:
    value = document[name]
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty string")
    return value
