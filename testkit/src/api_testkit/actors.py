"""Users made through the API, as clients make them: sign-up, login, a customer, the admin.

Every helper takes an ``httpx.AsyncClient`` whose base URL is the gateway (or users-service
itself) and asserts the answer it needs, so that a failing set-up names its cause.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from .callers import Caller, bearer
from .orders import place
from .stack import Stack
from .tokens import unverified_claims

PASSWORD = "correct horse battery"


def new_email(prefix: str = "user") -> str:
    """An address nobody has signed up with (its domain capitalised: emails fold case)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}@Example.com"


async def sign_up(client: httpx.AsyncClient, **fields: object) -> dict[str, Any]:
    """``POST /api/users`` with ``fields`` (a name by default); the created user."""
    response = await client.post("/api/users", json={"name": "Someone", **fields})
    assert response.status_code == 201, response.text
    user: dict[str, Any] = response.json()["data"]
    return user


async def log_in(
    client: httpx.AsyncClient, email: str, password: str = PASSWORD, **headers: str
) -> dict[str, Any]:
    """``POST /api/auth/token``: the token pair (``accessToken``, ``refreshToken``…)."""
    response = await client.post(
        "/api/auth/token", json={"email": email, "password": password}, headers=headers
    )
    assert response.status_code == 200, response.text
    tokens: dict[str, Any] = response.json()["data"]
    return tokens


async def access_token(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    """A fresh access token for that user."""
    token: str = (await log_in(client, email, password))["accessToken"]
    return token


async def customer(client: httpx.AsyncClient) -> tuple[dict[str, Any], dict[str, str]]:
    """A new customer, and the headers that carry their token."""
    email = new_email()
    user = await sign_up(client, email=email, password=PASSWORD)
    return user, bearer(await access_token(client, email))


async def customer_caller(client: httpx.AsyncClient) -> Caller:
    """A new customer as a ``Caller``: their id and the access token users-service issued."""
    email = new_email("customer")
    user = await sign_up(client, email=email, password=PASSWORD)
    return Caller(user["id"], await access_token(client, email))


async def admin_caller(client: httpx.AsyncClient, email: str, password: str) -> Caller:
    """An admin (by credentials) logged in afresh, as a ``Caller``."""
    token = await access_token(client, email, password)
    return Caller(str(unverified_claims(token)["sub"]), token)


async def another_admin(client: httpx.AsyncClient, admin: Caller) -> Caller:
    """A new admin, signed up by ``admin`` (only an admin may create one), logged in."""
    email = new_email("admin")
    body = {"name": "Another admin", "email": email, "password": PASSWORD, "role": "admin"}
    response = await client.post("/api/users", json=body, headers=admin.headers)
    assert response.status_code == 201, response.text
    return Caller(response.json()["data"]["id"], await access_token(client, email))


async def admin(client: httpx.AsyncClient, stack: Stack) -> dict[str, str]:
    """The headers of the admin the stack was started with."""
    return bearer(await access_token(client, stack.admin_email, stack.admin_password))


@dataclass
class Actors:
    """A customer with one order, and an admin (logins cost an Argon2 hash each: made once)."""

    me: dict[str, Any]
    headers: dict[str, str]
    order: dict[str, Any]
    admin: dict[str, str]


async def cast(stack: Stack) -> Actors:
    """A customer who placed an order noted "untouched", and the admin, on ``stack``."""
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as gateway:
        me, headers = await customer(gateway)
        order = (await place(gateway, headers, note="untouched")).json()["data"]
        return Actors(me, headers, order, await admin(gateway, stack))
