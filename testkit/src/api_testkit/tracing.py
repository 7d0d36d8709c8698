"""A real OTLP/HTTP trace receiver (what a collector or Jaeger listens with).

It decodes the protobuf export requests the services send, into ``ReceivedSpan``s.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One span as a process exported it."""

    service: str
    scope: str  # the instrumentation that made it (api_shared.tracing, ...asyncpg, ...)
    name: str
    kind: int  # opentelemetry.proto.trace.v1.Span.SpanKind
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span


class OtlpReceiver:
    """An OTLP/HTTP receiver on 127.0.0.1 (``POST /v1/traces``, protobuf), in its own thread.

    Its own thread, not the test's event loop: the services export from their batch
    processors whenever they like, including while a test blocks its loop.
    """

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver.receive(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the test reads the spans, not an access log

        return Handler

    def receive(self, request: ExportTraceServiceRequest) -> None:
        received = [
            ReceivedSpan(
                service=_service_name(resource_spans.resource.attributes),
                scope=scope_spans.scope.name,
                name=span.name,
                kind=span.kind,
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex(),
            )
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self._lock:
            self.spans.extend(received)
            self.requests += 1

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    @contextmanager
    def running(self) -> Iterator[OtlpReceiver]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()


def _service_name(attributes: Any) -> str:
    for attribute in attributes:
        if attribute.key == "service.name":
            return str(attribute.value.string_value)
    return ""
