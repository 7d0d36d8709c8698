"""Test support shared by every service's tests: real databases and real servers.

- ``temporary_database``: a fresh database for one test session, dropped afterwards:
  PostgreSQL when ``TEST_DATABASE_URL`` names a server, else a SQLite file.
- ``serve_in_process``: a service app listening on a free port, for real HTTP in tests.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from api_shared.auth import StaticKeySource, TokenVerifier
from api_shared.types import App

TEST_DATABASE_ENV = "TEST_DATABASE_URL"


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
