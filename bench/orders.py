"""Order creation through the gateway: ``POST /orders`` with a customer's token.

    uv run python bench/orders.py [--runs 3] [--duration 6]

Each request creates a real order of two items whose book ids cycle through the seeded
catalog, so every request pays the whole path: the gateway's token check and proxying,
orders-service's validation, its book check (one GraphQL query to books-graphql) and the
insert on PostgreSQL, with the order's event in the outbox, which the relay publishes to the
platform's nats-server. The gateway and wrk share core 0; the services and NATS core 1.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import httpx
import profiles
from harness import Wrk
from profiles import Profile
from report import Samples, Section, cli_options, wrk_table
from stack import Stack, new_customer, platform

CONNECTIONS = (32,)
LABELS = {"orders": "POST /orders through the gateway"}
# wrk calls request() for every request: a new body each time, book ids from the catalog.
SCRIPT = """
local books = {%s}
local token = "%s"
local n = 0
request = function()
  n = n + 1
  local first = books[n %% #books + 1]
  local second = books[(n * 7 + 3) %% #books + 1]
  local body = '{"items": [{"bookId": "' .. first .. '", "quantity": 1}, '
    .. '{"bookId": "' .. second .. '", "quantity": 2}], "note": "benchmark"}'
  return wrk.format("POST", "/orders", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. token,
  }, body)
end
"""


def book_ids(gateway_url: str) -> list[str]:
    response = httpx.post(f"{gateway_url}/graphql", json={"query": "{ books { id } }"}, timeout=30)
    response.raise_for_status()
    return [book["id"] for book in response.json()["data"]["books"]]


PROFILED = ("gateway", "orders", "books")


def measure(
    stack: Stack, wrk: Wrk, samples: Samples, where: dict[str, Profile] | None = None
) -> None:
    """The measured runs; and once, when ``where`` is given and empty, a profiled one."""
    gateway = stack.urls["gateway"]
    caller = new_customer(stack.urls["users"])
    books = ", ".join(json.dumps(book) for book in book_ids(gateway))
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "orders.lua"
        script.write_text(SCRIPT % (books, caller.token))
        wrk.warm(gateway + "/orders", script=script)
        for connections in CONNECTIONS:
            result = wrk(
                LABELS["orders"],
                gateway + "/orders",
                connections=connections,
                script=script,
                watch=[p for name, p in stack.processes.items() if name != "nginx"],
            )
            samples.setdefault(("orders", connections), []).append(result)
        if where is not None and not where:
            processes = [stack.processes[name] for name in PROFILED]
            where.update(profiles.record(wrk, processes, gateway + "/orders",
                                         connections=CONNECTIONS[0], script=script))  # fmt: skip


def section(samples: Samples, where: dict[str, Profile] | None = None) -> Section:
    return Section(
        title="Order creation through the gateway",
        intro=(
            "`POST /orders` with a customer's token and two items whose book ids cycle "
            "through the catalog: the gateway's token check and proxying, orders-service's "
            "validation, its book check (one GraphQL query to books-graphql) and the insert "
            "on PostgreSQL, with the order's event in the outbox (published by the relay to "
            "the platform's nats-server). wrk and the gateway on core 0, users, orders, books "
            "and nats-server on core 1."
        ),
        table=wrk_table(samples, LABELS),
        notes=[
            "No target: this is the platform's throughput and p99 for its most expensive "
            "write, reported for tracking.",
            "",
            *profiles.notes("Each process's CPU", where),
        ],
    )


def main() -> None:
    options = cli_options(__doc__)
    wrk = Wrk(options.duration)
    samples: Samples = {}
    where: dict[str, Profile] = {}
    for _ in range(options.runs):
        with platform() as stack:
            measure(stack, wrk, samples, where)
    wrk.save("orders")
    print(section(samples, where).markdown())


if __name__ == "__main__":
    main()
