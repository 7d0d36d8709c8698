"""The neighbours of a service under test as real processes: users-service and books-graphql.

A service's integration tests run it in their own process on a real database; what it talks
to runs the way ``make run`` starts it: the Procfile's own line (``stack.procfile_service``)
on a free port, with a fresh database (``databases``) and the development environment
(``environment``). users-service hashes at Argon2's cheapest (a suite signs many users up);
books-graphql seeds its catalog at start-up from a file of the suite's books, as it seeds
the shipped one. A suite starts each once, for its session.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.events.credentials import NatsLogin

from .databases import temporary_database
from .environment import development_environment, own_address, write_signing_key
from .ports import free_port
from .processes import Service
from .stack import ADMIN_EMAIL, ADMIN_PASSWORD, procfile_commands, procfile_service
from .tokens import TestSigner

ARGON2_CHEAPEST = {"ARGON2_TIME_COST": "1", "ARGON2_MEMORY_KIB": "8", "ARGON2_PARALLELISM": "1"}
"""The lowest cost users-service accepts (development only): a sign-up costs milliseconds."""


@dataclass(frozen=True, slots=True)
class SeedBook:
    """A book as a seed file holds it; its id is the one the catalog will have."""

    title: str
    author: str
    id: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))


@dataclass(frozen=True, slots=True)
class UsersService:
    """A running users-service: its process, its admin, and the key its tokens are signed
    with (written by the test, as an operator provisions it)."""

    service: Service
    admin_email: str
    admin_password: str
    signing_key_file: Path

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/.well-known/jwks.json"

    async def signer(self) -> TestSigner:
        """A signer with users-service's own key and key id: its tokens verify as users-
        service's, whatever claims a test gives them."""
        async with httpx.AsyncClient() as client:
            response = await client.get(self.jwks_url)
        assert response.status_code == 200, response.text
        kid = response.json()["keys"][0]["kid"]  # the current key comes first
        key = serialization.load_pem_private_key(self.signing_key_file.read_bytes(), password=None)
        assert isinstance(key, Ed25519PrivateKey)
        return TestSigner(private_key=key, kid=kid)


@asynccontextmanager
async def running_users_service(
    var: Path, nats: NatsLogin | None = None, environment: Mapping[str, str] | None = None
) -> AsyncIterator[UsersService]:
    """users-service on a fresh database, its admin ensured at start-up; its events go to
    ``nats`` as its own NATS user, or nowhere (``EVENTS_ENABLED=false``) without one;
    ``environment`` on top (a rate limit put back, say)."""
    events = (
        {"NATS_URL": nats.url, "NATS_NKEY_SEED_FILE": str(nats.seed_file)}
        if nats is not None
        else {"EVENTS_ENABLED": "false"}
    )
    async with _running(
        "users", var, {**ARGON2_CHEAPEST, **events, **(environment or {})}
    ) as service:
        key_file = _signing_key_file(var, "users")
        yield UsersService(service, ADMIN_EMAIL, ADMIN_PASSWORD, key_file)


@asynccontextmanager
async def running_books_graphql(var: Path, books: Sequence[SeedBook]) -> AsyncIterator[Service]:
    """books-graphql on a fresh database whose catalog is exactly ``books``."""
    seed_file = var / "seed-books.json"
    seed_file.write_bytes(orjson.dumps({"books": [dataclasses.asdict(book) for book in books]}))
    async with _running("books", var, {"BOOKS_SEED_FILE": str(seed_file)}) as service:
        yield service


def _signing_key_file(var: Path, name: str) -> Path:
    return var / f"{name}-signing-key.pem"


@asynccontextmanager
async def _running(name: str, var: Path, extra: Mapping[str, str]) -> AsyncIterator[Service]:
    """The Procfile's ``name`` on a fresh database and a free port, in the development
    environment with ``extra``, ready for the block and stopped after it (before its
    database is dropped)."""
    key_file = write_signing_key(_signing_key_file(var, name))  # every service is given one
    async with temporary_database(name) as database:
        port = free_port()
        env = development_environment(
            key_file, ADMIN_EMAIL, ADMIN_PASSWORD, **own_address(name, port, database), **extra
        )
        service = procfile_service(name, procfile_commands()[name], env, var, port)
        service.start()
        try:
            await service.until_ready()
            yield service
        finally:
            service.stop()
