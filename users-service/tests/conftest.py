"""Fixtures chain: keys → settings → app → running server → HTTP client, on a real database.

Argon2 runs with cheap parameters here (ARGON2_* settings); production keeps the strong ones.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import SecretStr
from sanic import Sanic

from api_shared.database import migrate
from api_shared.testing import serve_in_process, temporary_database
from users_service.app import create_app
from users_service.database import database_config
from users_service.settings import Settings

ADMIN_EMAIL = "root@example.com"
ADMIN_PASSWORD = "root-password-for-tests"
CHEAP_ARGON2 = {"argon2_time_cost": 1, "argon2_memory_kib": 8, "argon2_parallelism": 1}


@dataclass(frozen=True)
class ServiceKeys:
    """The service's current signing key and a retired one it still publishes."""

    current: Ed25519PrivateKey
    current_file: Path
    retired: Ed25519PrivateKey
    retired_public_file: Path


@pytest.fixture(scope="session")
def service_keys(tmp_path_factory: pytest.TempPathFactory) -> ServiceKeys:
    folder = tmp_path_factory.mktemp("keys")
    current, retired = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    current_file, retired_file = folder / "current.pem", folder / "retired.pub.pem"
    current_file.write_bytes(
        current.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    retired_file.write_bytes(
        retired.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return ServiceKeys(current, current_file, retired, retired_file)


@pytest.fixture(scope="session")
async def settings(service_keys: ServiceKeys) -> AsyncIterator[Settings]:
    async with temporary_database("users") as url:
        settings = Settings(
            database_url=url,
            environment="development",
            jwt_private_key_file=service_keys.current_file,
            jwt_public_key_files=(service_keys.retired_public_file,),
            admin_email=ADMIN_EMAIL,
            admin_password=SecretStr(ADMIN_PASSWORD),
            **CHEAP_ARGON2,
        )
        await migrate(database_config(settings))
        yield settings


@pytest.fixture(scope="session")
async def base_url(settings: Settings) -> AsyncIterator[str]:
    Sanic.test_mode = True
    async with serve_in_process(create_app(settings)) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client


@dataclass(frozen=True)
class Account:
    """A user created through the API, with a token obtained by logging in."""

    id: str
    email: str
    password: str
    role: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def log_in(client: httpx.AsyncClient, email: str, password: str) -> str:
    response = await client.post("/api/auth/token", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    token: str = response.json()["data"]["accessToken"]
    return token


@pytest.fixture
async def admin(client: httpx.AsyncClient) -> Account:
    """The admin that the service ensured at start-up from ADMIN_EMAIL/ADMIN_PASSWORD."""
    token = await log_in(client, ADMIN_EMAIL, ADMIN_PASSWORD)
    subject: str = jwt.decode(token, options={"verify_signature": False})["sub"]
    return Account(subject, ADMIN_EMAIL, ADMIN_PASSWORD, "admin", token)


NewAccount = Callable[..., Awaitable[Account]]


@pytest.fixture
def new_account(client: httpx.AsyncClient, admin: Account) -> NewAccount:
    """Sign up a user (admins through the admin) and log in as them."""

    async def create(role: str = "customer", name: str = "Test User") -> Account:
        email = f"{role}-{uuid.uuid4().hex[:10]}@example.com"
        password = f"password-{uuid.uuid4().hex[:8]}"
        body = {"name": name, "email": email, "password": password, "role": role}
        headers = admin.headers if role == "admin" else {}
        response = await client.post("/api/users", json=body, headers=headers)
        assert response.status_code == 201, response.text
        token = await log_in(client, email, password)
        return Account(response.json()["data"]["id"], email, password, role, token)

    return create
