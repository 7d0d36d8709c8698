"""The swarm stack of deploy/e2e-swarm.sh under load: waiting for it to converge, and the two
drills an operator needs to trust, each printing its figures as JSON and exiting non-zero
when its promise is broken.

    python deploy/swarm/drills.py converge --stack NAME
    python deploy/swarm/drills.py published-url --stack NAME --service books-graphql
    python deploy/swarm/drills.py rolling-update --stack NAME --image users-service=REF ...
    python deploy/swarm/drills.py node-loss --stack NAME --node-container-prefix PREFIX

- **rolling update**: while a customer places and reads orders through the gateway, each
  named service gets a new image, one task at a time, the new one started and healthy before
  the old one stops (the stack's ``update_config``). Promise: no failed request beyond the
  documented 503 retries, every acknowledged order stored once, every order event delivered
  once to a webhook receiver.
- **node loss**: the worker that runs an orders-service replica (and a NATS server) is
  killed under the same load; its clients retry what the network lost, with the same
  ``Idempotency-Key``. Promise: the tasks are rescheduled on the nodes left, no acknowledged
  order or event is lost; measured: how long until requests succeed again.

Reads E2E_GATEWAY_URL, E2E_ADMIN_EMAIL, E2E_ADMIN_PASSWORD, E2E_SWARM_RECEIVER_HOST (the
address containers reach this machine by) and DOCKER (default /usr/bin/docker).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from api_testkit.actors import access_token, customer
from api_testkit.callers import bearer
from api_testkit.catalog import book_ids
from api_testkit.traffic import OrderTraffic, Traffic
from api_testkit.webhooks import WebhookReceiver, webhook_receiver

CONVERGE_TIMEOUT_S = 420.0
UPDATE_TIMEOUT_S = 300.0
RESCHEDULE_TIMEOUT_S = 180.0
DELIVERY_TIMEOUT_S = 120.0
SETTLE_S = 5.0
ORDER_CREATED = "orders.order.created"
MIGRATION_SUFFIX = "-migrate"  # docker-compose.yml's one-shots: a task that completes
# What runs on workers and is rescheduled when one is lost (NATS servers stay with their node).
MOVABLE = (
    "users-service",
    "orders-service",
    "books-graphql",
    "webhooks-service",
    "webhooks-dispatcher",
)
# The webhooks services may call the drills' receiver: a private address over plain HTTP,
# which production refuses (docs/api.md#webhooks). Set on the test stack only, for the drills.
RECEIVER_ALLOWED = ("APP_ENV=development", "WEBHOOK_ALLOW_PRIVATE=true")


def docker(*args: str) -> str:
    """``docker *args``' output; SystemExit with its error when it fails."""
    done = subprocess.run(  # noqa: S603 (the Docker CLI, with this script's own arguments)
        [os.environ.get("DOCKER", "/usr/bin/docker"), *args], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"drills: docker {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def tasks(stack: str) -> list[dict[str, str]]:
    """The stack's tasks meant to run: service, node, state."""
    lines = docker(
        "stack", "ps", stack, "--filter", "desired-state=running",
        "--format", "{{.Name}}\t{{.Node}}\t{{.CurrentState}}\t{{.Image}}",
    ).splitlines()  # fmt: skip
    found = []
    for line in lines:
        name, node, state, image = line.split("\t")
        service = name.removeprefix(f"{stack}_").rsplit(".", 1)[0]
        found.append({"service": service, "node": node, "state": state, "image": image})
    return found


def running(stack: str, service: str) -> list[dict[str, str]]:
    return [t for t in tasks(stack) if t["service"] == service and t["state"].startswith("Running")]


def unconverged(stack: str) -> list[str]:
    """Services whose replicas are not all running, and migrations not completed."""
    waiting = []
    for line in docker(
        "stack", "services", stack, "--format", "{{.Name}}\t{{.Replicas}}"
    ).splitlines():
        name, replicas = line.split("\t")
        if name.endswith(MIGRATION_SUFFIX):
            states = docker("service", "ps", name, "--format", "{{.CurrentState}}").splitlines()
            if not any(state.startswith("Complete") for state in states):
                waiting.append(f"{name} {states[:1]}")
        elif len(set(replicas.split(" ")[0].split("/"))) != 1:
            waiting.append(f"{name} {replicas}")
    return waiting


def placement(stack: str) -> dict[str, str]:
    """Where each service's running tasks are: service -> its nodes."""
    where: dict[str, list[str]] = {}
    for task in tasks(stack):
        if task["state"].startswith("Running"):
            where.setdefault(task["service"], []).append(task["node"])
    return {service: " ".join(sorted(nodes)) for service, nodes in sorted(where.items())}


async def gateway_healthy(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=3.0) as client:
            return (await client.get(f"{url}/health")).status_code == 200
    except httpx.HTTPError:
        return False


async def converge(stack: str) -> int:
    """Wait until every service runs its replicas, every job completed and the gateway
    answers; print the nodes and where each task runs."""
    started = time.monotonic()
    while unconverged(stack) or not await gateway_healthy(os.environ["E2E_GATEWAY_URL"]):
        if time.monotonic() - started > CONVERGE_TIMEOUT_S:
            print(json.dumps({"converged": False, "waiting": unconverged(stack)}, indent=2))
            return 1
        await asyncio.sleep(2)
    report = {
        "converged_in_s": round(time.monotonic() - started, 1),
        "nodes": docker("node", "ls", "--format", "{{.Hostname}} {{.ManagerStatus}}").splitlines(),
        "placement": placement(stack),
    }
    print(json.dumps(report, indent=2))
    return 0


def node_address(node: str) -> str:
    """The address a node's host-mode ports are published on."""
    address = docker("node", "inspect", "--format", "{{.Status.Addr}}", node).strip()
    if address in ("", "0.0.0.0"):  # noqa: S104 (a manager may report its address only below)
        manager = docker("node", "inspect", "--format", "{{.ManagerStatus.Addr}}", node)
        address = manager.strip().rsplit(":", 1)[0]
    return address


def published_url(stack: str, service: str) -> str:
    """http://<node>:<port> of the service's host-mode port, on the node its task runs on."""
    ports = json.loads(
        docker(
            "service",
            "inspect",
            "--format",
            "{{json .Spec.EndpointSpec.Ports}}",
            f"{stack}_{service}",
        )
    )
    task = running(stack, service)[0]
    return f"http://{node_address(task['node'])}:{ports[0]['PublishedPort']}"


def stream_last_sequence(stack: str, stream: str) -> int:
    """The last sequence of ``stream``, asked of the NATS server on this (the manager) node."""
    container = docker(
        "ps", "--quiet", "--filter", f"label=com.docker.swarm.service.name={stack}_nats-1"
    ).split()[0]
    script = (
        "import json, urllib.request as r;"
        "u = 'http://127.0.0.1:8222/jsz?accounts=true&streams=true';"
        "d = json.load(r.urlopen(u, timeout=5));"
        "print(json.dumps([s for a in d['account_details'] for s in a.get('stream_detail', [])]))"
    )
    for detail in json.loads(docker("exec", container, "python", "-c", script)):
        if detail["name"] == stream:
            return int(detail["state"]["last_seq"])
    return 0


class Deliveries:
    """What reached the drills' webhook endpoint."""

    def __init__(self, receiver: WebhookReceiver) -> None:
        self.receiver = receiver

    def orders_delivered(self) -> Counter[str]:
        """Deliveries per order id (an event's subject), repeats counted."""
        return Counter(receipt.event["subject"] for receipt in self.receiver.received["drill"])

    def repeated(self) -> int:
        """Deliveries beyond the first of one event (one webhook-id)."""
        ids = Counter(receipt.webhook_id for receipt in self.receiver.received["drill"])
        return sum(count - 1 for count in ids.values())

    async def wait_for(self, orders: list[str]) -> list[str]:
        """The acknowledged orders whose created event has not arrived within the timeout."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while True:
            delivered = self.orders_delivered()
            missing = [order for order in orders if order not in delivered]
            if not missing or time.monotonic() > deadline:
                return missing
            await asyncio.sleep(1)


def allow_receiver(stack: str) -> None:
    """Let the webhooks services call the receiver's private address (no change, no restart,
    when already allowed)."""
    args = [arg for env in RECEIVER_ALLOWED for arg in ("--env-add", env)]
    for service in ("webhooks-service", "webhooks-dispatcher"):
        docker("service", "update", "--quiet", *args, f"{stack}_{service}")


@asynccontextmanager
async def receiving(gateway: httpx.AsyncClient, stack: str) -> AsyncIterator[Deliveries]:
    """A receiver on this machine and an endpoint for it, registered by the admin for every
    order created, for the block's duration (then deleted: no later drill's events go to a
    receiver that is gone)."""
    allow_receiver(stack)
    async with webhook_receiver(host=os.environ["E2E_SWARM_RECEIVER_HOST"]) as receiver:
        email, password = os.environ["E2E_ADMIN_EMAIL"], os.environ["E2E_ADMIN_PASSWORD"]
        admin = bearer(await access_token(gateway, email, password))
        response = await gateway.post(
            "/api/webhooks",
            json={"url": receiver.url("drill"), "eventTypes": [ORDER_CREATED]},
            headers=admin,
        )
        if response.status_code != 201:
            raise SystemExit(f"drills: endpoint refused: {response.status_code} {response.text}")
        try:
            yield Deliveries(receiver)
        finally:
            endpoint = response.json()["data"]["id"]
            await gateway.delete(f"/api/webhooks/{endpoint}", headers=admin)


async def update_finished(stack: str, service: str) -> str:
    """Wait for the service's update to end; its final state (completed, rollback_...)."""
    deadline = time.monotonic() + UPDATE_TIMEOUT_S
    while time.monotonic() < deadline:
        state = (await asyncio.to_thread(  # off the event loop: the load's clients run on it
            docker, "service", "inspect", "--format",
            "{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}", f"{stack}_{service}",
        )).strip()  # fmt: skip
        if state in ("completed", "paused", "rollback_completed", "rollback_paused"):
            return state
        await asyncio.sleep(1)
    return "timed out"


def traffic_report(traffic: Traffic, lost: list[str], stored: int) -> dict[str, Any]:
    return {
        "requests": traffic.requests,
        "orders_acknowledged": len(traffic.writes_acknowledged),
        "orders_stored": stored,
        "retries_503": traffic.retries_503,
        "outage_retries": traffic.outage_retries,
        "reads_failed_in_outage": traffic.reads_failed_in_outage,
        "failed": len(traffic.failures),
        "lost_orders": len(lost),
        "failures": traffic.failures[:10],
        "lost": lost[:10],
    }


def events_report(published: int, deliveries: Deliveries, missing: list[str]) -> dict[str, Any]:
    return {
        "order_events_published": published,
        "order_events_delivered": len(deliveries.orders_delivered()),
        "deliveries_repeated": deliveries.repeated(),
        "acknowledged_without_event": len(missing),
    }


async def rolling_update(stack: str, images: dict[str, str]) -> int:
    async with (
        httpx.AsyncClient(base_url=os.environ["E2E_GATEWAY_URL"], timeout=30.0) as gateway,
        receiving(gateway, stack) as deliveries,
    ):
        _, headers = await customer(gateway)
        load = OrderTraffic(gateway, headers, (await book_ids(gateway))[0])
        before = stream_last_sequence(stack, "ORDERS")
        started = time.monotonic()
        async with load.running() as traffic:
            await asyncio.sleep(SETTLE_S)
            for service, image in images.items():
                docker("service", "update", "--detach", "--image", image, f"{stack}_{service}")
            finished = await asyncio.gather(*(update_finished(stack, s) for s in images))
            states = dict(zip(images, finished, strict=True))
            await asyncio.sleep(SETTLE_S)
        took = time.monotonic() - started
        lost, stored = await load.lost_writes(), await load.orders_stored()
        missing = await deliveries.wait_for(traffic.writes_acknowledged)
        published = stream_last_sequence(stack, "ORDERS") - before
    after = {service: sorted({t["image"] for t in running(stack, service)}) for service in images}
    report = {
        "drill": "rolling update",
        "updates": states,
        "images_after": after,
        "seconds": round(took, 1),
        **traffic_report(traffic, lost, stored),
        **events_report(published, deliveries, missing),
        "placement_after": placement(stack),
    }
    print(json.dumps(report, indent=2))
    kept = (
        all(state == "completed" for state in states.values())
        and all(after[service] == [image] for service, image in images.items())
        and not traffic.failures
        and not lost
        and stored == len(traffic.writes_acknowledged)
        and not missing
        and published == len(traffic.writes_acknowledged) == len(deliveries.orders_delivered())
        and deliveries.repeated() == 0
    )
    return 0 if kept else 1


async def rescheduled(stack: str, lost_node: str, services: dict[str, int]) -> float | None:
    """Seconds until each service runs its replicas again, none on the lost node."""
    started = time.monotonic()
    while time.monotonic() - started < RESCHEDULE_TIMEOUT_S:
        # One `docker stack ps` a round, off the event loop (the load's clients run on it).
        running_now = [
            t for t in await asyncio.to_thread(tasks, stack) if t["state"].startswith("Running")
        ]
        nodes = {s: [t["node"] for t in running_now if t["service"] == s] for s in services}
        if all(len(nodes[s]) == services[s] and lost_node not in nodes[s] for s in services):
            return time.monotonic() - started
        await asyncio.sleep(1)
    return None


def _holds_every_replica(stack: str, node: str) -> bool:
    """Whether ``node`` runs every replica of some service that has two or more."""
    for service in MOVABLE:
        nodes = [t["node"] for t in running(stack, service)]
        if len(nodes) >= 2 and set(nodes) == {node}:
            return True
    return False


async def node_loss(stack: str, prefix: str) -> int:
    workers = sorted({t["node"] for t in running(stack, "orders-service")} - {"", None})
    nats_nodes = {t["node"] for n in ("nats-2", "nats-3") for t in running(stack, n)}
    candidates = [node for node in workers if node in nats_nodes]
    if not candidates:
        raise SystemExit("drills: no worker runs both an orders-service replica and a NATS server")
    # Swarm never rebalances running tasks: after the rolling update's start-first
    # replacements, both replicas of a service may share a node. Losing that node is a
    # placement failure, not the one this drill is about (a replica elsewhere takes over), so
    # a node that leaves every replicated service a replica is killed when there is one.
    keeps_a_replica = [node for node in candidates if not _holds_every_replica(stack, node)]
    # books-graphql runs one replica and every order write asks it: losing its node stops
    # order creation until it is rescheduled (about 25 s), past the clients' retries. That
    # is a single replica lost, not this drill's case: its node is spared when another fits.
    books = {t["node"] for t in running(stack, "books-graphql")}
    spares_books = [node for node in keeps_a_replica if node not in books]
    node = (spares_books or keeps_a_replica or candidates)[-1]
    on_node_before = sorted(
        t["service"] for t in tasks(stack) if t["node"] == node and t["state"].startswith("Running")
    )
    replicated = {service: len(running(stack, service)) for service in MOVABLE}
    async with (
        httpx.AsyncClient(base_url=os.environ["E2E_GATEWAY_URL"], timeout=30.0) as gateway,
        receiving(gateway, stack) as deliveries,
    ):
        _, headers = await customer(gateway)
        load = OrderTraffic(gateway, headers, (await book_ids(gateway))[0], tolerate_outage=True)
        before = stream_last_sequence(stack, "ORDERS")
        async with load.running() as traffic:
            await asyncio.sleep(SETTLE_S)
            killed_at = time.monotonic()
            docker("kill", f"{prefix}{node}")  # the whole node at once: no goodbye to anyone
            back_in = await rescheduled(stack, node, replicated)
            await asyncio.sleep(2 * SETTLE_S)
        trouble = [moment - killed_at for moment in traffic.trouble_at if moment >= killed_at]
        lost, stored = await load.lost_writes(), await load.orders_stored()
        missing = await deliveries.wait_for(traffic.writes_acknowledged)
        published = stream_last_sequence(stack, "ORDERS") - before
    report = {
        "drill": "node loss",
        "node_killed": node,
        "its_tasks": on_node_before,
        "rescheduled_in_s": None if back_in is None else round(back_in, 1),
        "requests_in_trouble": len(trouble),
        "answering_normally_again_after_s": round(max(trouble, default=0.0), 1),
        **traffic_report(traffic, lost, stored),
        **events_report(published, deliveries, missing),
        "placement_after": placement(stack),
    }
    print(json.dumps(report, indent=2))
    kept = (
        back_in is not None
        and not traffic.failures
        and not lost
        and stored == len(traffic.writes_acknowledged)
        and not missing
        and published == len(traffic.writes_acknowledged) == len(deliveries.orders_delivered())
    )
    return 0 if kept else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "drill", choices=["converge", "published-url", "rolling-update", "node-loss"]
    )
    parser.add_argument("--stack", required=True)
    parser.add_argument("--service", help="published-url: the service")
    parser.add_argument("--image", action="append", default=[], help="rolling-update: SERVICE=REF")
    parser.add_argument(
        "--node-container-prefix", default="", help="node-loss: worker containers' prefix"
    )
    args = parser.parse_args()
    if args.drill == "converge":
        return asyncio.run(converge(args.stack))
    if args.drill == "published-url":
        print(published_url(args.stack, args.service))
        return 0
    if args.drill == "rolling-update":
        images = dict(image.split("=", 1) for image in args.image)
        return asyncio.run(rolling_update(args.stack, images))
    return asyncio.run(node_loss(args.stack, args.node_container_prefix))


if __name__ == "__main__":
    sys.exit(main())
