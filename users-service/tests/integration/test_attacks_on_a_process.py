"""Attacks (#12) that need a users-service process of its own: its memory, its start-up.

Each test starts ``python -m users_service`` as a child process on a fresh database and
attacks it over HTTP; memory is read from /proc of that child.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from api_shared.events.credentials import new_seed

ProcessLauncher = Any  # the conftest fixture: start(**env), running(**env)

KIB_PER_MIB = 1024
FLOOD = 50
SLOTS = 2
ARGON2_MEMORY_KIB = 64 * KIB_PER_MIB  # the production default: what an attacker makes us hold
ALLOWED_RSS_GROWTH_KIB = 30 * KIB_PER_MIB  # HTTP, connections, threads: besides the hashes


def a_body(email: str) -> dict[str, str]:
    return {"name": "Flood", "email": email, "password": "flood-password"}


def production_settings(launcher: ProcessLauncher) -> dict[str, str | None]:
    """What production requires on top of the launcher's: its Argon2 floor, an operator's
    admin password in a file (never in the environment), the NKey seed of its NATS user."""
    seed = launcher.logs / "users-service.nk"
    seed.write_bytes(new_seed())
    password = launcher.logs / "admin-password"
    password.write_text("the-operators-password\n")
    return {
        "APP_ENV": "production",
        "ADMIN_PASSWORD": None,
        "ADMIN_PASSWORD_FILE": str(password),
        "ARGON2_TIME_COST": "2",
        "ARGON2_MEMORY_KIB": "19456",
        "NATS_NKEY_SEED_FILE": str(seed),
    }


async def test_fifty_concurrent_sign_ups_stay_within_two_hashing_slots_and_logins_answer(
    launcher: ProcessLauncher,
) -> None:
    """The Argon2 flood: 50 sign-ups at once, each asking for 64 MiB of Argon2 memory.

    With 2 slots at most 2 hashes hold their memory at once: the peak RSS (VmHWM) stays
    under the resting RSS + 2 x 64 MiB + 30 MB (six at once, the default executor on
    two cores, would blow it). Every answer is 201, 409 (taken emails, answered before
    hashing) or 503 with Retry-After; a login sent meanwhile is answered (200, or 503 once
    its slot wait ran out: never queued behind the flood, which the slot unit tests bound
    in time), and one sent afterwards succeeds.
    """
    async with (
        launcher.running(
            ARGON2_SLOTS=str(SLOTS), ARGON2_MEMORY_KIB=str(ARGON2_MEMORY_KIB)
        ) as service,
        httpx.AsyncClient(base_url=service.url, timeout=30.0) as client,
    ):
        taken = f"taken-{uuid.uuid4().hex[:8]}@example.com"
        assert (await client.post("/api/users", json=a_body(taken))).status_code == 201
        resting_kib = service.status("VmRSS")
        emails = [
            taken if n % 10 == 0 else f"flood-{n}-{uuid.uuid4().hex[:8]}@example.com"
            for n in range(FLOOD)
        ]

        flood = [asyncio.create_task(client.post("/api/users", json=a_body(e))) for e in emails]
        await asyncio.sleep(0.05)  # the flood is in before the login
        login = await client.post(
            "/api/auth/token", json={"email": taken, "password": "flood-password"}
        )
        responses = await asyncio.gather(*flood)
        peak_kib = service.status("VmHWM")
        after = await client.post(
            "/api/auth/token", json={"email": taken, "password": "flood-password"}
        )

    statuses = Counter(response.status_code for response in responses)
    assert set(statuses) <= {201, 409, 429, 503}, statuses
    assert statuses[201] >= 1, statuses
    assert [r.status_code for r, e in zip(responses, emails, strict=True) if e == taken] == [
        409
    ] * (FLOOD // 10)
    for response in responses:
        if response.status_code == 503:
            assert response.json()["error"]["code"] == "UNAVAILABLE"
            assert int(response.headers["retry-after"]) >= 1
    assert peak_kib <= resting_kib + SLOTS * ARGON2_MEMORY_KIB + ALLOWED_RSS_GROWTH_KIB, (
        f"peak {peak_kib} KiB, resting {resting_kib} KiB"
    )
    assert login.status_code == 200  # the slot kept for logins (users_service.passwords)
    assert after.status_code == 200


SIGN_UP_FLOOD = 40
ADMIN = {"email": "root@example.com", "password": "root-password-for-tests"}


async def test_logins_during_a_forty_way_sign_up_flood_are_all_answered(
    launcher: ProcessLauncher,
) -> None:
    """The flood of #25 item 18: 40 sign-ups at once (as from 40 addresses, so that no
    per-address limit stops them), at the production Argon2 cost and slot count; an admin
    logging in meanwhile was answered 503 in 2 of 3 runs. Logins keep a slot of their own and
    are served before waiting sign-ups: every login sent during the flood succeeds."""
    production_cost = {"ARGON2_TIME_COST": "3", "ARGON2_MEMORY_KIB": str(ARGON2_MEMORY_KIB),
                       "ARGON2_PARALLELISM": "4"}  # fmt: skip
    async with (
        launcher.running(**production_cost) as service,
        httpx.AsyncClient(base_url=service.url, timeout=60.0) as client,
    ):
        flood = [
            asyncio.create_task(
                client.post(
                    "/api/users", json=a_body(f"wave-{n}-{uuid.uuid4().hex[:8]}@example.com")
                )
            )
            for n in range(SIGN_UP_FLOOD)
        ]
        await asyncio.sleep(0.05)  # the flood is in before the logins
        logins: list[httpx.Response] = []
        while not all(task.done() for task in flood) or not logins:
            logins.append(await client.post("/api/auth/token", json=ADMIN))
        sign_ups = Counter(response.status_code for response in await asyncio.gather(*flood))

    assert [login.status_code for login in logins] == [200] * len(logins), [
        login.text for login in logins if login.status_code != 200
    ]
    assert set(sign_ups) <= {201, 503}, sign_ups
    assert sign_ups[201] >= 1  # degraded, not stopped


async def test_an_admin_email_someone_registered_first_is_skipped_loudly_and_starts_anyway(
    launcher: ProcessLauncher, tmp_path: Path
) -> None:
    """The bootstrap squatter: register the address the operator is about to configure.

    Neither production nor development promotes them; both start without the configured
    admin and say so at ERROR level (refusing to start would let whoever signs up first
    keep the service down). The squatter stays a customer with their own password.
    """
    squatted = f"ops-{uuid.uuid4().hex[:8]}@example.com"
    async with (
        launcher.running() as before,
        httpx.AsyncClient(base_url=before.url) as client,
    ):
        signed_up = await client.post("/api/users", json=a_body(squatted))
        assert signed_up.status_code == 201
    secret = tmp_path / "admin-password"
    secret.write_text("the-operators-password\n")

    development = {"ADMIN_PASSWORD": None, "ADMIN_PASSWORD_FILE": str(secret)}
    for environment, settings in (
        ("production", production_settings(launcher)),
        ("development", development),
    ):
        async with (
            launcher.running(**settings, ADMIN_EMAIL=squatted) as service,
            httpx.AsyncClient(base_url=service.url) as client,
        ):
            squatter = await client.post(
                "/api/auth/token", json={"email": squatted, "password": "flood-password"}
            )
            operator = await client.post(
                "/api/auth/token", json={"email": squatted, "password": "the-operators-password"}
            )
            listing = await client.get(
                "/api/users",
                headers={"Authorization": f"Bearer {squatter.json()['data']['accessToken']}"},
            )
        lines = [json.loads(line) for line in service.stdout.read_text().splitlines() if line]

        assert (squatter.status_code, operator.status_code) == (200, 401), environment
        assert listing.status_code == 403  # still a customer
        [said] = [line for line in lines if line.get("event") == "admin_email_taken"]
        assert said["level"] == "error"
        assert "not an admin" in said["message"]


async def test_production_without_the_nats_users_seed_refuses_to_start_in_one_line(
    launcher: ProcessLauncher,
) -> None:
    """The broker refuses clients without credentials (docs/api.md#events): a users-service
    configured with none would record events that never leave its outbox."""
    settings = production_settings(launcher)
    del settings["NATS_NKEY_SEED_FILE"]

    production = launcher.start(**settings)
    exit_code = await asyncio.to_thread(production.process.wait, 60)
    refusal = production.stderr.read_text()

    assert exit_code == 2
    assert refusal.count("\n") == 1, refusal
    assert refusal.startswith("users-service: refusing to start: NATS_NKEY_SEED_FILE must name")
    assert "Traceback" not in refusal + production.stdout.read_text()
