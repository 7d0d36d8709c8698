"""Who a caller is for the limits: every X-Forwarded-For line, the address under every token,
IPv6 by its /64; sign-ups per address; the resolved address sent upstream as X-Real-IP."""

from __future__ import annotations

import httpx

from api_testkit.tokens import TestSigner

from .conftest import StartGateway

PROXY = {"trusted_proxies": ["127.0.0.1"]}


def _from(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def test_every_x_forwarded_for_line_is_read_so_the_client_cannot_choose_its_bucket(
    start_echo_gateway: StartGateway,
) -> None:
    # The client writes a line of its own; the trusted proxy adds its line with the real
    # client address. Reading only the first line would give each request a fresh bucket.
    async with start_echo_gateway("books", rate_limit_rps=0.1, rate_limit_burst=1, **PROXY) as gw:
        answers = []
        for spoofed in ("1.1.1.1", "2.2.2.2"):
            headers = httpx.Headers(
                [("X-Forwarded-For", spoofed), ("X-Forwarded-For", "198.51.100.7")]
            )
            answers.append(await gw.post("/graphql", json={}, headers=headers))

    assert [a.status_code for a in answers] == [200, 429]
    forwarded = answers[0].json()["headers"]["x-forwarded-for"]
    assert forwarded == "1.1.1.1, 198.51.100.7, 127.0.0.1"  # one line, every hop kept


async def test_many_tokens_from_one_address_share_the_addresss_budget(
    start_echo_gateway: StartGateway, signer: TestSigner
) -> None:
    per_caller = {"rate_limit_rps": 0.1, "rate_limit_burst": 10}
    per_address = {"address_rate_limit_rps": 0.1, "address_rate_limit_burst": 3}
    async with start_echo_gateway("orders", **per_caller, **per_address) as gw:
        answers = [
            await gw.get("/orders", headers={"Authorization": f"Bearer {signer.token(f'u{n}')}"})
            for n in range(4)
        ]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[-1].headers["ratelimit-policy"] == '"address";q=3;w=30'


async def test_the_address_limit_defaults_to_four_times_the_callers(
    start_echo_gateway: StartGateway, signer: TestSigner
) -> None:
    async with start_echo_gateway("orders", rate_limit_rps=0.1, rate_limit_burst=1) as gw:
        answers = [
            await gw.get("/orders", headers={"Authorization": f"Bearer {signer.token(f'u{n}')}"})
            for n in range(5)
        ]

    assert [a.status_code for a in answers] == [200] * 4 + [429]


async def test_an_ipv6_caller_rotating_through_its_64_keeps_one_bucket(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway("books", rate_limit_rps=0.1, rate_limit_burst=2, **PROXY) as gw:
        rotating = [
            await gw.post("/graphql", json={}, headers=_from(f"2001:db8:7:7::{n:x}"))
            for n in range(1, 4)
        ]
        neighbour = await gw.post("/graphql", json={}, headers=_from("2001:db8:7:8::1"))

    assert [r.status_code for r in rotating] == [200, 200, 429]
    assert neighbour.status_code == 200


async def test_sign_ups_are_limited_per_address_and_other_changes_of_users_are_not(
    start_echo_gateway: StartGateway, signer: TestSigner
) -> None:
    token = {"Authorization": f"Bearer {signer.token('u1')}"}
    async with start_echo_gateway("users", signup_rate_limit_per_minute=2, **PROXY) as gw:
        attacker, someone = _from("198.51.100.1"), _from("198.51.100.2")
        sign_ups = [await gw.post("/api/users", json={}, headers=attacker) for _ in range(3)]
        # What a PATCH costs is users-service's to know and charge (its own budgets).
        change = await gw.patch("/api/users/u1", json={"password": "x"}, headers=attacker | token)
        elsewhere = await gw.post("/api/users", json={}, headers=someone)

    assert [r.status_code for r in sign_ups] == [200, 200, 429]
    assert sign_ups[-1].headers["ratelimit-policy"] == '"signup";q=2;w=60'
    assert change.status_code == 200
    assert elsewhere.status_code == 200


async def test_the_client_address_resolved_here_is_sent_upstream_and_a_clients_own_is_not(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway("books", **PROXY) as gw:
        behind_proxy = await gw.post(
            "/graphql", json={}, headers={"X-Forwarded-For": "198.51.100.7:4711"}
        )
        spoofed = await gw.post("/graphql", json={}, headers={"X-Real-IP": "203.0.113.66"})
        garbage_hop = await gw.post(
            "/graphql", json={}, headers={"X-Forwarded-For": "198.51.100.7, not-an-address"}
        )

    assert behind_proxy.json()["headers"]["x-real-ip"] == "198.51.100.7"
    assert spoofed.json()["headers"]["x-real-ip"] == "127.0.0.1"
    assert garbage_hop.json()["headers"]["x-real-ip"] == "127.0.0.1"
