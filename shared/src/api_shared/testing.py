"""Test support shared by every service's tests: real databases and real servers.

- ``temporary_database``: a fresh database for one test session, dropped afterwards:
  PostgreSQL when ``TEST_DATABASE_URL`` names a server, else a SQLite file.
- ``serve_in_process``: a service app listening on a free port, for real HTTP in tests.
- ``OtlpReceiver``: a real OTLP/HTTP trace receiver (what a collector or Jaeger listens
  with), decoding the protobuf export requests the services send.
- ``npm_install`` and ``run_node``: real JavaScript clients (from npm, cached on disk) run
  with node against a server under test.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from api_shared.auth import StaticKeySource, TokenVerifier
from api_shared.types import App

TEST_DATABASE_ENV = "TEST_DATABASE_URL"
NPM_INSTALL_TIMEOUT_S = 240.0
NODE_TIMEOUT_S = 120.0


async def is_ready(client: httpx.AsyncClient, path: str = "/ready") -> bool:
    """Whether the server behind ``client`` answers ``path`` with 200 (not yet listening: no)."""
    try:
        return (await client.get(path)).status_code == 200
    except httpx.TransportError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def database_kind() -> str:
    """Which database the tests run against, for the test report header."""
    return "postgresql" if os.environ.get(TEST_DATABASE_ENV) else "sqlite"


@asynccontextmanager
async def temporary_database(service: str) -> AsyncIterator[str]:
    """Yield the URL of a fresh, empty database for ``service``; drop it afterwards."""
    server_url = os.environ.get(TEST_DATABASE_ENV)
    if not server_url:
        with tempfile.TemporaryDirectory(prefix=f"{service}-") as folder:
            yield f"sqlite://{Path(folder) / 'test.sqlite3'}"
        return

    name = f"test_{service.replace('-', '_')}_{uuid.uuid4().hex[:12]}"
    admin_dsn = server_url.replace("postgres://", "postgresql://", 1)
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    parts = urlsplit(server_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        admin = await asyncpg.connect(admin_dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@asynccontextmanager
async def serve_in_process(app: App, port: int | None = None) -> AsyncIterator[str]:
    """Run ``app`` on 127.0.0.1 in this event loop; yield its base URL."""
    port = port or free_port()
    server = await app.create_server(
        host="127.0.0.1", port=port, return_asyncio_server=True, access_log=False
    )
    assert server is not None
    await server.startup()
    await server.before_start()
    await server.after_start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await server.before_stop()
        closing = server.close()
        if closing is not None:
            await closing
        await server.after_stop()


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


class TestSigner:
    """A real Ed25519 key pair that signs real tokens, for tests of every service.

    ``verifier()`` trusts exactly this key, as a service configured with its JWKS would.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, *, issuer: str = "users-service", audience: str = "api-platform") -> None:

        self.issuer = issuer
        self.audience = audience
        self.private_key = Ed25519PrivateKey.generate()
        self.kid = f"test-{uuid.uuid4().hex[:8]}"

    def token(self, subject: str, role: str = "customer", **overrides: object) -> str:
        """A signed token for ``subject``; ``overrides`` replace or (with None) drop claims."""

        now = int(time.time())
        claims: dict[str, object] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "role": role,
            "iat": now,
            "exp": now + 900,
            "jti": uuid.uuid4().hex,
        }
        claims.update(overrides)
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt.encode(claims, self.private_key, algorithm="EdDSA", headers={"kid": self.kid})

    def jwks(self) -> dict[str, object]:
        """The public half, as users-service publishes it."""

        jwk = json.loads(OKPAlgorithm.to_jwk(self.private_key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "alg": "EdDSA", "use": "sig"}]}

    def verifier(self) -> TokenVerifier:

        return TokenVerifier(
            StaticKeySource({self.kid: self.private_key.public_key()}),
            issuer=self.issuer,
            audience=self.audience,
        )


async def npm_install(prefix: Path, packages: Sequence[str]) -> Path:
    """``node_modules`` under ``prefix`` holding the pinned ``packages`` ("name@version").

    Installed on first use and kept (``prefix`` is a git-ignored cache), so later runs need
    no network. Missing npm, or a failed install, fails the calling test with the reason.
    """
    node_modules = prefix / "node_modules"
    if all(_npm_installed(node_modules, spec) for spec in packages):
        return node_modules
    npm = shutil.which("npm")
    if npm is None:
        raise AssertionError("npm was not found; install Node.js (apt-get install -y npm).")
    await asyncio.to_thread(prefix.mkdir, parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        npm, "install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
        "--prefix", str(prefix), *packages,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        output, _ = await asyncio.wait_for(process.communicate(), NPM_INSTALL_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"npm install {' '.join(packages)} took too long") from None
    if process.returncode != 0 or not all(_npm_installed(node_modules, s) for s in packages):
        raise AssertionError(f"npm install {' '.join(packages)} failed:\n{output.decode()[-3000:]}")
    return node_modules


def _npm_installed(node_modules: Path, spec: str) -> bool:
    name, _, version = spec.rpartition("@")
    manifest = node_modules / name / "package.json"
    return manifest.is_file() and json.loads(manifest.read_bytes()).get("version") == version


async def run_node(script: Path, node_modules: Path, *args: str) -> bytes:
    """Run a CommonJS ``script`` with node, its ``require`` served from ``node_modules``.

    Returns its standard output; a failing or missing node fails the calling test.
    """
    node = shutil.which("node")
    if node is None:
        raise AssertionError("node was not found; install Node.js (apt-get install -y nodejs).")
    process = await asyncio.create_subprocess_exec(
        node, str(script), *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NODE_PATH": str(node_modules)},
    )  # fmt: skip
    try:
        output, errors = await asyncio.wait_for(process.communicate(), NODE_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"node {script.name} took over {NODE_TIMEOUT_S}s") from None
    if process.returncode != 0:
        raise AssertionError(f"node {script.name} failed:\n{errors.decode()[-3000:]}")
    return output
