"""AsyncAPI 3.0 documents of the events (docs/api.md#events), built from ``EventCatalog``s.

Each event-producing service serves the document of its own catalog at
``/docs/asyncapi.json`` (``install_asyncapi``), as it serves its OpenAPI document; the gateway
joins them (``merge``) into the platform's ``/asyncapi.json``. A document has:

- one server, ``nats`` (protocol ``nats``): wherever ``NATS_URL`` points;
- per event type, one channel (its address: the NATS subject), one ``receive`` operation and
  one message: the CloudEvents envelope (``envelope_schema``) with ``type`` and ``source``
  fixed and ``data`` the catalog's model;
- the envelope and the models as component schemas: JSON Schema draft-07, AsyncAPI's default
  format, written as responses are (``ResponseSchema``: every field, no other one).

Webhooks POST the same documents (docs/api.md#webhooks), so each message describes a
webhook's body as well; its headers there are Standard Webhooks', not NATS's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel
from sanic import Request
from sanic.response import HTTPResponse

from api_shared.events.catalog import EventCatalog, EventSpec
from api_shared.events.envelope import CONTENT_TYPE, envelope_schema
from api_shared.events.settings import EMBEDDED_NATS_PORT
from api_shared.openapi.dialect import ResponseSchema
from api_shared.representation import json_response
from api_shared.types import App

ASYNCAPI_VERSION = "3.0.0"
DOCUMENT_PATH = "/docs/asyncapi.json"
SERVER = "nats"
ENVELOPE = "CloudEvent"
SCHEMAS = "#/components/schemas/{model}"

DESCRIPTION = (
    "The events of the platform (docs/api.md#events): CloudEvents 1.0 JSON documents on NATS "
    "JetStream, one subject per event type, published at least once (de-duplicate on `id`). "
    "Webhooks (docs/api.md#webhooks) POST the same documents, so each message here also "
    "describes a webhook's body; a webhook's headers follow Standard Webhooks (webhook-id, "
    "webhook-timestamp, webhook-signature) instead of the NATS headers described here."
)


def nats_server() -> dict[str, Any]:
    """The NATS server every channel is on (not public: reached inside the deployment)."""
    return {
        "host": "{host}",
        "protocol": "nats",
        "title": "NATS with JetStream",
        "description": "The deployment's NATS (`NATS_URL`); `make run` starts one on "
        f"localhost:{EMBEDDED_NATS_PORT}. Streams keep events 7 days.",
        "variables": {
            "host": {
                "default": f"localhost:{EMBEDDED_NATS_PORT}",
                "description": "host:port of NATS_URL",
            }
        },
    }


def _info(title: str, version: str) -> dict[str, Any]:
    """``version``: the publishing service's (docs/releasing.md); its events are part of its
    contract, versioned with its REST API."""
    return {"title": title, "version": version, "description": DESCRIPTION}


def _id(event_type: str) -> str:
    """A component's key for an event type: ``orders.order.created`` → ``ordersOrderCreated``."""
    first, *rest = event_type.split(".")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/{kind}/{name}"}


def model_schemas(model: type[BaseModel]) -> dict[str, Any]:
    """``model`` and the models and enums it uses, as component schemas by name."""
    schema = model.model_json_schema(
        by_alias=True, ref_template=SCHEMAS, schema_generator=ResponseSchema, mode="validation"
    )
    components: dict[str, Any] = schema.pop("$defs", {})
    components[model.__name__] = schema
    return components


def _message(catalog: EventCatalog, spec: EventSpec) -> dict[str, Any]:
    return {
        "name": spec.type,
        "title": spec.type,
        "summary": spec.summary,
        "contentType": CONTENT_TYPE,
        "headers": {
            "type": "object",
            "properties": {
                "Nats-Msg-Id": {
                    "type": "string",
                    "description": "The event's id: JetStream drops a repeat within 10 minutes.",
                },
                "Content-Type": {"type": "string", "const": CONTENT_TYPE},
            },
        },
        "payload": {
            "allOf": [
                {"$ref": SCHEMAS.format(model=ENVELOPE)},
                {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "const": spec.type},
                        "source": {"type": "string", "const": catalog.source},
                        "data": {"$ref": SCHEMAS.format(model=spec.data.__name__)},
                    },
                },
            ]
        },
    }


def service_document(title: str, catalog: EventCatalog, *, version: str) -> dict[str, Any]:
    """The AsyncAPI 3.0 document of one service's events, at the service's ``version``."""
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    schemas: dict[str, Any] = {ENVELOPE: envelope_schema()}
    for spec in catalog.events:
        key = _id(spec.type)
        messages[key] = _message(catalog, spec)
        channels[key] = {
            "address": spec.nats_subject,
            "title": spec.type,
            "description": f"Stream {catalog.stream.name}. {spec.summary}",
            "servers": [_ref("servers", SERVER)],
            "messages": {key: _ref("components/messages", key)},
        }
        operations[f"receive{key[:1].upper()}{key[1:]}"] = {
            "action": "receive",
            "title": f"Receive {spec.type}",
            "summary": spec.summary,
            "channel": _ref("channels", key),
            "messages": [_ref(f"channels/{key}/messages", key)],
        }
        schemas.update(model_schemas(spec.data))
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": _info(title, version),
        "defaultContentType": CONTENT_TYPE,
        "servers": {SERVER: nats_server()},
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": schemas},
    }


def merge(title: str, documents: Iterable[Mapping[str, Any]], *, version: str) -> dict[str, Any]:
    """One document, ``title`` at ``version`` (the merger's), of several services' documents.

    Channels, operations and messages are each service's own (keyed by event type, which
    starts with the service); a schema two services both use (the envelope) is kept once.
    """
    merged: dict[str, Any] = {
        "asyncapi": ASYNCAPI_VERSION,
        "info": _info(title, version),
        "defaultContentType": CONTENT_TYPE,
        "servers": {SERVER: nats_server()},
        "channels": {},
        "operations": {},
        "components": {"messages": {}, "schemas": {}},
    }
    for document in documents:
        for part in ("channels", "operations"):
            merged[part].update(copy.deepcopy(document.get(part, {})))
        for part in ("messages", "schemas"):
            for name, value in document.get("components", {}).get(part, {}).items():
                merged["components"][part].setdefault(name, copy.deepcopy(value))
    return merged


def install_asyncapi(app: App, document: Mapping[str, Any]) -> None:
    """Serve ``document`` at ``GET /docs/asyncapi.json``."""

    @app.get(DOCUMENT_PATH, name="asyncapi")
    async def get_asyncapi(request: Request) -> HTTPResponse:
        return json_response(document)
