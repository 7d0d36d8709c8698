"""A service stops, or hangs, under steady traffic: only its own routes suffer, and only for
the outage; the rest of the platform keeps serving and nothing needs restarting afterwards."""

from __future__ import annotations

from .conftest import GATEWAY_TIMEOUT_S, FaultBench


async def test_while_orders_service_is_down_only_orders_are_refused_and_all_recovers(
    fault_bench: FaultBench,
) -> None:
    await fault_bench.stopped("orders")


async def test_while_the_catalog_is_down_orders_cannot_be_created_and_all_recovers(
    fault_bench: FaultBench,
) -> None:
    await fault_bench.stopped("books")


async def test_while_users_service_is_down_known_tokens_keep_order_reads_and_books_working(
    fault_bench: FaultBench,
) -> None:
    await fault_bench.stopped("users")


async def test_a_hanging_orders_service_costs_504s_at_the_gateway_timeout_and_no_more(
    fault_bench: FaultBench,
) -> None:
    findings = await fault_bench.paused("orders", outage_s=GATEWAY_TIMEOUT_S + 1.0)

    timeouts = [o for o in findings.outcomes if o.detail == "UPSTREAM_TIMEOUT"]
    assert timeouts, "no request waited for the gateway's timeout"
    assert all(o.finished - o.started >= GATEWAY_TIMEOUT_S - 0.1 for o in timeouts)


async def test_a_hanging_catalog_costs_503s_for_new_orders_and_504s_for_graphql(
    fault_bench: FaultBench,
) -> None:
    findings = await fault_bench.paused("books", outage_s=GATEWAY_TIMEOUT_S + 1.0)

    refused = {(o.action, o.detail) for o in findings.outcomes if o.detail}
    assert ("books.read", "UPSTREAM_TIMEOUT") in refused
    assert {a for a, code in refused if a.startswith("orders.create")} == {
        "orders.create",
        "orders.create-keyed",
    }
    assert {code for a, code in refused if a.startswith("orders.create")} == {"UNAVAILABLE"}
