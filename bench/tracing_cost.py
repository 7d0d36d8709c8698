"""What tracing costs the gateway: off, on at 1 % sampling, on at 100 %.

    uv run python bench/tracing_cost.py [--runs 3] [--duration 6]

The same authenticated ``GET /api/users/{id}`` as the gateway-overhead benchmark, through
three gateways in front of the same users-service: the platform's own (no OTLP endpoint:
tracing off) and two started beside it with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at an
OTLP/HTTP receiver in this process (api_testkit.tracing's, the one the tests use), sampling
with ``parentbased_traceidratio`` at 0.01 and ``parentbased_always_on``. Only the gateway
traces: the cost measured is its own (server span, client span, export). The gateways
share core 0 with wrk, users-service has core 1. No target: the figures are reported so
that a change in the cost shows; tracing off is the gateway-overhead benchmark's gateway.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from harness import LOAD_CORE, Process, Wrk, alternate, started
from report import Ratio, Samples, Section, cli_options, wrk_table
from stack import PYTHON, Stack, new_customer, platform

from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready
from api_testkit.tracing import OtlpReceiver

CONNECTIONS = 32
# Peer -> the tracing variables of its gateway (None: the platform's gateway, tracing off).
SAMPLING: dict[str, dict[str, str] | None] = {
    "off": None,
    "1%": {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"},
    "100%": {"OTEL_TRACES_SAMPLER": "parentbased_always_on"},
}
PEERS = {
    "off": "gateway, tracing off",
    "1%": "gateway, tracing on, 1 % sampled",
    "100%": "gateway, tracing on, 100 % sampled",
}


@contextmanager
def traced_gateways(stack: Stack, receiver: OtlpReceiver) -> Iterator[dict[str, str]]:
    """Base URLs by peer: the platform's gateway and one more per sampling, exporting to
    ``receiver``; the extra gateways stop when the block ends."""
    urls: dict[str, str] = {}
    with ExitStack() as stack_of_gateways:
        for peer, variables in SAMPLING.items():
            if variables is None:
                urls[peer] = stack.urls["gateway"]
                continue
            port, admin_port = free_port(), free_port()
            env = dict(stack.environment)
            env.update(
                {
                    "GATEWAY_PORT": str(port),
                    "GATEWAY_ADMIN_PORT": str(admin_port),
                    "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                    "OTEL_SERVICE_NAME": f"gateway-{peer}",
                    **variables,
                }
            )
            process: Process = stack_of_gateways.enter_context(
                started(f"gateway-{peer}", [PYTHON, "-m", "gateway", "serve"], env, LOAD_CORE)
            )
            wait_ready(f"http://127.0.0.1:{admin_port}/ready", process.exited)
            stack.processes[f"gateway-{peer}"] = process
            urls[peer] = f"http://127.0.0.1:{port}"
        try:
            yield urls
        finally:
            for peer, variables in SAMPLING.items():
                if variables is not None:
                    stack.processes.pop(f"gateway-{peer}", None)


def measure(stack: Stack, wrk: Wrk, samples: Samples, receiver: OtlpReceiver) -> None:
    """One run: each peer at 32 connections, back to back, in an order that turns per run."""
    caller = new_customer(stack.urls["users"])
    path = f"/api/users/{caller.id}"
    with traced_gateways(stack, receiver) as urls:
        watched = {
            peer: [stack.processes["gateway" if variables is None else f"gateway-{peer}"]]
            for peer, variables in SAMPLING.items()
        }
        for url in urls.values():
            wrk.warm(url + path, headers=caller.headers)
        run = len(samples.get(("off", CONNECTIONS), []))
        for peer in alternate(list(PEERS), run):
            samples.setdefault((peer, CONNECTIONS), []).append(
                wrk(
                    f"GET /api/users/{{id}} {PEERS[peer]}",
                    urls[peer] + path,
                    connections=CONNECTIONS,
                    headers=caller.headers,
                    watch=watched[peer],
                )
            )


def section(samples: Samples, spans_received: int) -> Section:
    def ratio(peer: str) -> list[float]:
        pairs = zip(samples[(peer, CONNECTIONS)], samples[("off", CONNECTIONS)], strict=True)
        return [on.requests_per_s / off.requests_per_s for on, off in pairs]

    def cpu_ratio(peer: str) -> list[float]:
        pairs = zip(samples[(peer, CONNECTIONS)], samples[("off", CONNECTIONS)], strict=True)
        return [
            on.cpu_us[f"gateway-{peer}"] / off.cpu_us["gateway"]
            for on, off in pairs
            if on.cpu_us.get(f"gateway-{peer}") and off.cpu_us.get("gateway")
        ]

    return Section(
        title="Tracing cost at the gateway",
        intro=(
            "The gateway-overhead request (`GET /api/users/{id}` with a customer's token) "
            "through a gateway with tracing off and through two started beside it with "
            "tracing on, exporting over OTLP/HTTP to a receiver in the benchmark process: "
            "`parentbased_traceidratio` at 0.01 (1 % of requests sampled) and "
            "`parentbased_always_on` (100 %). Only the gateway traces. wrk and the gateways "
            "on core 0, users-service on core 1 (`python bench/run.py tracing` measures "
            "this section alone)."
        ),
        table=wrk_table(samples, PEERS),
        ratios=[
            Ratio("tracing 1 % / off, gateway throughput", ratio("1%"), None),
            Ratio("tracing 100 % / off, gateway throughput", ratio("100%"), None),
            Ratio(
                "tracing 1 % / off, gateway CPU per request",
                cpu_ratio("1%"),
                None,
                higher_is_better=False,
            ),
            Ratio(
                "tracing 100 % / off, gateway CPU per request",
                cpu_ratio("100%"),
                None,
                higher_is_better=False,
            ),
        ],
        notes=[
            f"The receiver got {spans_received:,} spans in all. With tracing off the gateway "
            "installs no tracing middleware and loads no SDK (shared/tests/unit/"
            "test_tracing_off.py), so its figure is the gateway-overhead benchmark's."
        ],
    )


def measure_all(wrk: Wrk, runs: int, samples: Samples) -> int:
    """``runs`` runs, each on a platform of its own; how many spans the receiver got."""
    with OtlpReceiver().running() as receiver:
        for _ in range(runs):
            with platform() as stack:
                measure(stack, wrk, samples, receiver)
        return len(receiver.received())


def main() -> None:
    options = cli_options(__doc__)
    wrk = Wrk(options.duration)
    samples: Samples = {}
    spans = measure_all(wrk, options.runs, samples)
    wrk.save("tracing")
    print(section(samples, spans).markdown())


if __name__ == "__main__":
    main()
