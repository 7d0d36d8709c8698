"""A rolling upgrade under load, on the compose stack: two replicas of a service at one
release are replaced, one at a time, by the release a tag names, while customers place and
read orders through the gateway.

    python deploy/rolling_upgrade.py orders-service --tag-variable ORDERS_IMAGE_TAG --to e2e

Reads E2E_GATEWAY_URL, E2E_COMPOSE_PROJECT, E2E_COMPOSE_ENV_FILE (deploy/mixed-versions.sh
sets them) and DOCKER (default /usr/bin/docker). The upgrade is what an operator does: the
new release's migration job first (expand: the old replicas keep serving on the migrated
schema), then for each old replica a new one is started (``--scale 3 --no-recreate``) and,
once healthy, the old one is stopped (SIGTERM: it drains) and removed.

Passes (exit 0) when no request failed beyond the documented 503s (a ``POST`` cut by a
replica going away is answered 503 and retried with its ``Idempotency-Key``, docs/api.md)
and every order acknowledged with 201 is readable afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys

import httpx

from api_testkit.actors import customer
from api_testkit.catalog import book_ids
from api_testkit.traffic import OrderTraffic

SETTLE_S = 3.0  # steady traffic before, between and after the replacements


def compose(*args: str, env: dict[str, str] | None = None) -> str:
    """``docker compose`` on the stack under test; its output, or SystemExit on failure."""
    docker = os.environ.get("DOCKER", "/usr/bin/docker")
    command = [
        docker,
        "compose",
        "--project-name",
        os.environ["E2E_COMPOSE_PROJECT"],
        "--env-file",
        os.environ["E2E_COMPOSE_ENV_FILE"],
        *args,
    ]
    done = subprocess.run(  # noqa: S603 (the Docker CLI, with this script's own arguments)
        command, capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    if done.returncode != 0:
        raise SystemExit(f"rolling-upgrade: {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def docker(*args: str) -> str:
    """``docker *args``' output; raises when it fails."""
    done = subprocess.run(  # noqa: S603 (the Docker CLI, with this script's own arguments)
        [os.environ.get("DOCKER", "/usr/bin/docker"), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


async def roll(service: str, migrate: str | None, tag_variable: str, tag: str) -> list[str]:
    """Replace each running replica of ``service`` by one at ``tag``; the steps taken."""
    env = {tag_variable: tag}
    old = compose("ps", "--quiet", service).split()
    steps = [f"{len(old)} replicas: {' '.join(container[:12] for container in old)}"]
    if migrate:
        await asyncio.to_thread(compose, "run", "--rm", "--no-deps", migrate, env=env)
        steps.append(f"{migrate} at {tag}: applied")
    for container in old:
        await asyncio.sleep(SETTLE_S)
        await asyncio.to_thread(
            compose,
            "up",
            "--detach",
            "--no-deps",
            "--no-build",
            "--no-recreate",
            "--wait",
            "--wait-timeout",
            "300",
            "--scale",
            f"{service}={len(old) + 1}",
            service,
            env=env,
        )
        await asyncio.to_thread(docker, "stop", container)  # SIGTERM: it drains first
        await asyncio.to_thread(docker, "rm", container)
        steps.append(f"{container[:12]} replaced")
    await asyncio.sleep(SETTLE_S)
    return steps


async def run(service: str, migrate: str | None, tag_variable: str, tag: str) -> int:
    gateway_url = os.environ["E2E_GATEWAY_URL"]
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30.0) as gateway:
        _, headers = await customer(gateway)
        load = OrderTraffic(gateway, headers, (await book_ids(gateway))[0])
        async with load.running() as traffic:
            steps = await roll(service, migrate, tag_variable, tag)
        lost = await load.lost_writes()

    images = {
        docker("inspect", "--format", "{{.Config.Image}}", container).strip()
        for container in compose("ps", "--quiet", service).split()
    }
    report = {
        "service": service,
        "steps": steps,
        "images_after": sorted(images),
        "requests": traffic.requests,
        "writes_acknowledged": len(traffic.writes_acknowledged),
        "retries_503": traffic.retries_503,
        "failed": len(traffic.failures),
        "lost_writes": len(lost),
        "failures": traffic.failures[:10],
        "lost": lost[:10],
    }
    print(json.dumps(report, indent=2))
    upgraded = all(image.endswith(f":{tag}") for image in images) and len(images) == 1
    return 0 if upgraded and not traffic.failures and not lost else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("service")
    parser.add_argument("--migrate", help="the service's migration one-shot (compose service)")
    parser.add_argument("--tag-variable", required=True, help="e.g. ORDERS_IMAGE_TAG")
    parser.add_argument("--to", required=True, help="the image tag to upgrade to")
    args = parser.parse_args()
    return asyncio.run(run(args.service, args.migrate, args.tag_variable, args.to))


if __name__ == "__main__":
    sys.exit(main())
