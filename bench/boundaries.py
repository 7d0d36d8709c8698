"""Figures of the attacks on the boundaries between services, against the whole stack.

    uv run python bench/boundaries.py [--runs 3]

Starts every service as a real process (the test kit's stack: PostgreSQL when
TEST_DATABASE_URL says so, the production Argon2 cost, the default limits of the budgets
below) and prints, per run:

- **credential-change flood**: one address sends email changes with a guessed
  ``currentPassword`` and real password changes to ``/api/users/{id}//``, one after the
  other; the attempt that first got 429, and the slowest of a bystander's logins (another
  address, every 0.25 s) while it lasted;
- **sign-up flood**: 40 sign-ups at once from 40 addresses (a trusted proxy's
  ``X-Forwarded-For``), and the admin logging in again and again meanwhile: the logins'
  statuses and the slowest;
- **suspended admin**: from the ``PATCH {"isActive": false}`` until both ``GET /orders``
  (everyone's) and ``POST /api/webhooks`` with that admin's token are refused;
- **reset requests, known vs unknown address**: ``POST /api/password-reset-requests`` for
  an address with an account and one without, interleaved (``RESET_SAMPLES`` each, a fresh
  client address each so no budget interferes): the answers' statuses and bodies, and the
  times' median, p90 and p99 side by side with their difference (what an attacker timing
  the answer would have to see through the noise).

Nothing is asserted: the tests perform the attacks (tests/e2e/test_hostile_input_brute_force.py,
test_admin_standing.py, users-service's test_attacks_on_a_process.py); this says how they go.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

from api_testkit.stack import Stack, start_stack

PASSWORD = "correct horse battery"
FLOOD = 40
ATTEMPTS = 80
RESET_SAMPLES = 200
# The limits a deployment has by default (the test kit lifts them for the other tests).
DEFAULTS = {
    "LOGIN_RATE_LIMIT_PER_MINUTE": "10",
    "SIGNUP_RATE_LIMIT_PER_MINUTE": "10",
    "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": "10",
    "LOGIN_ACCOUNT_CEILING_PER_MINUTE": "100",
    "CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE": "10",
    "CURRENT_PASSWORD_FAILURE_LIMIT": "10",
    "RESET_REQUEST_RATE_LIMIT_PER_MINUTE": "5",
    "TRUSTED_PROXIES": "127.0.0.1",  # so that one client can be many addresses
}


def address() -> dict[str, str]:
    """A client address of a /48 of its own."""
    suffix = uuid.uuid4().hex
    return {"X-Forwarded-For": f"2001:{suffix[:4]}:{suffix[4:8]}::1"}


async def account(gateway: httpx.AsyncClient, headers: dict[str, str] | None = None) -> str:
    email = f"figures-{uuid.uuid4().hex[:10]}@example.com"
    body = {"name": "Figures", "email": email, "password": PASSWORD}
    created = await gateway.post("/api/users", json=body, headers=headers or address())
    assert created.status_code == 201, created.text
    return email


async def log_in(
    gateway: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> httpx.Response:
    return await gateway.post(
        "/api/auth/token", json={"email": email, "password": password}, headers=address()
    )


async def bearer(
    gateway: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> dict[str, str]:
    response = await log_in(gateway, email, password)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['data']['accessToken']}"}


async def credential_flood(gateway: httpx.AsyncClient) -> str:
    victim, bystander = await account(gateway), await account(gateway)
    token = await bearer(gateway, victim)
    me = (await gateway.get("/api/users/me", headers=token)).json()["data"]["id"]
    attacker = address()
    done = asyncio.Event()
    bystanders: list[tuple[int, float]] = []

    async def bystander_logs_in() -> None:
        while not done.is_set():
            started = time.monotonic()
            response = await log_in(gateway, bystander)
            bystanders.append((response.status_code, time.monotonic() - started))
            await asyncio.sleep(0.25)

    watching = asyncio.create_task(bystander_logs_in())
    statuses = []
    for n in range(ATTEMPTS):
        if n % 2:
            path, body = f"/api/users/{me}//", {"password": f"new password {n}"}
        else:
            path, body = f"/api/users/{me}", {"email": f"f-{n}-{uuid.uuid4().hex[:6]}@example.com"}
        body["currentPassword"] = f"guess {n}"
        response = await gateway.patch(path, json=body, headers=token | attacker)
        statuses.append(response.status_code)
    done.set()
    await watching
    first = statuses.index(429) + 1 if 429 in statuses else None
    logins = Counter(status for status, _ in bystanders)
    slowest = max(seconds for _, seconds in bystanders)
    return (
        f"credential-change flood: {dict(Counter(statuses))}, first 429 at attempt {first}; "
        f"bystander's logins {dict(logins)}, slowest {slowest * 1000:.0f} ms"
    )


async def sign_up_flood(gateway: httpx.AsyncClient, stack: Stack) -> str:
    async def sign_up(n: int) -> int:
        body = {"name": "Flood", "email": f"wave-{n}-{uuid.uuid4().hex}@example.com",
                "password": PASSWORD}  # fmt: skip
        return (await gateway.post("/api/users", json=body, headers=address())).status_code

    flood = [asyncio.create_task(sign_up(n)) for n in range(FLOOD)]
    await asyncio.sleep(0.05)
    logins: list[tuple[int, float]] = []
    while not all(task.done() for task in flood) or not logins:
        started = time.monotonic()
        response = await log_in(gateway, stack.admin_email, stack.admin_password)
        logins.append((response.status_code, time.monotonic() - started))
    sign_ups = Counter(await asyncio.gather(*flood))
    statuses = Counter(status for status, _ in logins)
    slowest = max(seconds for _, seconds in logins)
    return (
        f"sign-up flood of {FLOOD}: sign-ups {dict(sign_ups)}; admin's logins meanwhile "
        f"{dict(statuses)}, slowest {slowest * 1000:.0f} ms"
    )


async def suspended_admin(gateway: httpx.AsyncClient, stack: Stack) -> str:
    boss = await bearer(gateway, stack.admin_email, stack.admin_password)
    email = f"admin-{uuid.uuid4().hex[:10]}@example.com"
    made = await gateway.post(
        "/api/users",
        json={"name": "Admin", "email": email, "password": PASSWORD, "role": "admin"},
        headers=boss,
    )
    admin = await bearer(gateway, email)
    endpoint = {"url": "http://127.0.0.1:9/hook", "eventTypes": ["*"]}
    before = (
        (await gateway.get("/orders", headers=admin)).status_code,
        (await gateway.post("/api/webhooks", json=endpoint, headers=admin)).status_code,
    )
    suspended_at = time.monotonic()
    await gateway.patch(
        f"/api/users/{made.json()['data']['id']}", json={"isActive": False}, headers=boss
    )
    refused: dict[str, float] = {}
    while len(refused) < 2:
        for name, response in (
            ("GET /orders", await gateway.get("/orders", headers=admin)),
            (
                "POST /api/webhooks",
                await gateway.post("/api/webhooks", json=endpoint, headers=admin),
            ),
        ):
            if response.status_code in (401, 403) and name not in refused:
                refused[name] = time.monotonic() - suspended_at
        await asyncio.sleep(0.05)
    times = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in refused.items())
    return f"suspended admin (before: {before}): refused after {times}"


async def reset_request_timing(gateway: httpx.AsyncClient) -> str:
    known = await account(gateway)
    times: dict[str, list[float]] = {"known": [], "unknown": []}
    answers: dict[str, Counter[tuple[int, bytes]]] = {"known": Counter(), "unknown": Counter()}
    for n in range(RESET_SAMPLES * 2):
        kind = "known" if n % 2 else "unknown"
        email = known if kind == "known" else f"nobody-{uuid.uuid4().hex[:10]}@example.com"
        started = time.perf_counter()
        response = await gateway.post(
            "/api/password-reset-requests", json={"email": email}, headers=address()
        )
        times[kind].append(time.perf_counter() - started)
        answers[kind][(response.status_code, response.content)] += 1

    def quantiles(values: list[float]) -> tuple[float, float, float]:
        ordered = sorted(values)

        def at(q: float) -> float:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

        return at(0.5), at(0.9), at(0.99)

    (k50, k90, k99), (u50, u90, u99) = quantiles(times["known"]), quantiles(times["unknown"])
    same = set(answers["known"]) == set(answers["unknown"])
    return (
        f"reset requests, {RESET_SAMPLES} each: answers {'identical' if same else 'DIFFER'} "
        f"({dict(answers['known'])}); known p50/p90/p99 {k50:.2f}/{k90:.2f}/{k99:.2f} ms, "
        f"unknown {u50:.2f}/{u90:.2f}/{u99:.2f} ms, median difference {k50 - u50:+.2f} ms"
    )


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as var:
        async with (
            start_stack(Path(var), DEFAULTS) as stack,
            httpx.AsyncClient(base_url=stack.gateway_url, timeout=60.0) as gateway,
        ):
            for run in range(1, runs + 1):
                print(f"run {run}: {await credential_flood(gateway)}", flush=True)
                print(f"run {run}: {await sign_up_flood(gateway, stack)}", flush=True)
                print(f"run {run}: {await suspended_admin(gateway, stack)}", flush=True)
                print(f"run {run}: {await reset_request_timing(gateway)}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args().runs))
