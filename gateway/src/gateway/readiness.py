"""Is an upstream ready? At least one of its replicas answers ``/ready`` with 200."""

from __future__ import annotations

import aiohttp

from gateway.upstreams import Upstream

READY_TIMEOUT = aiohttp.ClientTimeout(total=2.0)


async def upstream_ready(session: aiohttp.ClientSession, upstream: Upstream) -> None:
    """Return when a replica is ready; raise otherwise."""
    failures: list[str] = []
    for target in upstream.targets:
        try:
            async with session.get(f"{target.url}/ready", timeout=READY_TIMEOUT) as response:
                if response.status == 200:
                    return
                failures.append(f"{target.url}: {response.status}")
        except (aiohttp.ClientError, TimeoutError) as error:
            failures.append(f"{target.url}: {type(error).__name__}")
    raise ConnectionError(f"{upstream.name} not ready ({'; '.join(failures)})")
